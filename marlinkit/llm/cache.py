"""Record and replay LLM calls: a JSONL transcript file around any backend.

Each call is keyed by backend name, model, the full messages and the generation settings
(seed included); a hit returns the recorded reply without loading the model. Records keep the
key, the last message and the reply (not the whole chat: the system prompt would repeat in
every line), so committed transcripts stay small. ``replay_only`` turns a miss into an error
that names the file, so ``make figures`` never silently runs a model it was meant to replay.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

from marlinkit.llm.base import ChatBackend, GenerationSettings, LLMError, Reply


class TranscriptMiss(LLMError):
    """A replay-only cache was asked for a call it has not recorded."""


def call_key(backend: str, model: str, messages: list[dict[str, str]], settings: GenerationSettings) -> str:
    blob = json.dumps({"backend": backend, "model": model, "messages": messages, "settings": settings.to_dict()},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class TranscriptCache:
    """A ``ChatBackend`` that answers from ``path`` when it can and records what it cannot.

    ``backend`` may be None in replay-only mode; ``name``/``model`` then say whose calls to replay.
    """

    def __init__(self, backend: ChatBackend | None, path: str | os.PathLike, replay_only: bool = False,
                 name: str | None = None, model: str | None = None):
        if backend is None and not replay_only:
            raise ValueError("recording needs a backend; pass one or set replay_only=True")
        self.backend = backend
        self.path = Path(path)
        self.replay_only = replay_only
        self.name = name or backend.name
        self.model = model or backend.model
        self.hits = self.misses = 0
        self._records = self._load()

    def _load(self) -> dict[str, dict]:
        records = {}
        if not self.path.exists():
            return records
        with self.path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                try:
                    record = json.loads(line)
                    records[record["key"]] = record
                except (json.JSONDecodeError, KeyError):
                    warnings.warn(f"{self.path}:{number}: unreadable transcript line skipped (interrupted write?)")
        return records

    def __len__(self) -> int:
        return len(self._records)

    def chat(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Reply:
        key = call_key(self.name, self.model, messages, settings)
        record = self._records.get(key)
        if record is not None:
            self.hits += 1
            return Reply(record["reply"], record["prompt_tokens"], record["completion_tokens"], record["seconds"],
                         record["finish_reason"], cached=True)
        if self.replay_only or self.backend is None:
            raise TranscriptMiss(
                f"replay-only transcript {self.path} has no reply for this {self.name}:{self.model} call "
                f"({len(self._records)} recorded). The smoke preset only replays (replay_only: True in its "
                "section of marlinkit/presets.py). To record the missing replies, run the same experiment once with "
                "replay_only=False and smollm2 installed (`make setup`), e.g. experiments.run_llm_only('smoke', "
                "replay_only=False) (run_training and run_scalability take the same override); the quick and "
                "paper presets record misses themselves. "
                "Or use settings that match the recorded run.")
        self.misses += 1
        reply = self.backend.chat(messages, settings)
        record = {"key": key, "backend": self.name, "model": self.model, "settings": settings.to_dict(),
                  "n_messages": len(messages), "last_message": messages[-1]["content"], "reply": reply.text,
                  "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "seconds": round(reply.seconds, 4), "finish_reason": reply.finish_reason}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:  # one write per line: appends stay whole
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        self._records[key] = record
        return reply
