"""The LLM seam: chat messages and generation settings in, a reply with token counts and latency out."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

ROLES = ("system", "user", "assistant")


class LLMError(RuntimeError):
    """A backend could not produce a reply (missing weights, endpoint down, bad answer).

    A transcript that cannot answer is a ``marlinkit.llm.cache.TranscriptError`` instead: callers
    that fall back on an ``LLMError`` must never fall back on a strict replay.
    """


@dataclass(frozen=True)
class GenerationSettings:
    """How to sample one reply; part of the transcript-cache key, so every field must be plain data."""

    temperature: float = 0.8  # 0 means greedy decoding (the authors used 0.8)
    max_new_tokens: int = 300  # reply length cap (the authors' value)
    top_p: float = 1.0  # nucleus sampling mass
    seed: int | None = 0  # sampling seed; same seed, same messages -> same reply on local backends
    stop: tuple[str, ...] = ()  # strings that end the reply; they are cut from the returned text

    def __post_init__(self):
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        object.__setattr__(self, "stop", tuple(self.stop))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "stop": list(self.stop)}


@dataclass
class Reply:
    """One model reply and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float  # latency of the call that produced the text (the recorded one on replay)
    finish_reason: str = "stop"  # "stop" (EOS or stop string) or "length" (hit max_new_tokens)
    cached: bool = False  # served from a transcript cache without calling the model
    extra: dict[str, Any] = field(default_factory=dict)


class ChatBackend(Protocol):
    """Anything that answers a chat. ``name`` and ``model`` identify it in cache keys and figures."""

    name: str
    model: str

    def chat(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Reply: ...


def check_messages(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Reject malformed chats before they reach a model (a clear error beats a template crash)."""
    if not messages:
        raise ValueError("a chat needs at least one message")
    for i, message in enumerate(messages):
        if set(message) != {"role", "content"}:
            raise ValueError(f"message {i} must have exactly 'role' and 'content', got {sorted(message)}")
        if message["role"] not in ROLES:
            raise ValueError(f"message {i} has role {message['role']!r}; use one of {ROLES}")
        if not isinstance(message["content"], str):
            raise ValueError(f"message {i} content must be a string")
    if messages[-1]["role"] == "assistant":
        raise ValueError("the last message must not be the assistant's: there is nothing to answer")
    return messages


def cut_at_stop(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    """Text up to the first stop string (excluded), and whether one was found."""
    cuts = [text.find(s) for s in stop if s and s in text]
    if not cuts:
        return text, False
    return text[: min(cuts)], True
