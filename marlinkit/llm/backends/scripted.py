"""A backend that answers from a script: fixed replies in order, or a function of the chat.

For tests and for teaching a protocol without a model. The scripts that play the papers' protocols live with
them: ``marlinkit.marlin.negotiation.greedy_robots`` (MARLIN's negotiation) and
``marlinkit.maestro.architect.scripted_architect_replies`` (MAESTRO's architect).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from marlinkit.llm.base import GenerationSettings, LLMError, Reply, check_messages, cut_at_stop

Script = Sequence[str] | Callable[[list[dict[str, str]]], str]


class ScriptedBackend:
    """Replies from ``script``: a list consumed in order (an error when exhausted) or a callable."""

    name = "scripted"

    def __init__(self, script: Script | None, model: str | None = None):
        if script is None:
            raise ValueError("the scripted backend plays a script: pass one (MARLIN's negotiation: "
                             "marlinkit.marlin.negotiation.greedy_robots; MAESTRO's architect: "
                             "marlinkit.maestro.architect.scripted_architect_replies())")
        self.script = script
        self.model = model or "script"
        self._next = 0
        self.replies = 0  # replies given so far (a script is run, never replayed)

    def chat(self, messages: list[dict[str, str]], settings: GenerationSettings) -> Reply:
        start = time.perf_counter()
        check_messages(messages)
        if callable(self.script):
            text = self.script(messages)
        else:
            if self._next >= len(self.script):
                raise LLMError(f"the script has only {len(self.script)} replies; call {self._next + 1} has none")
            text = self.script[self._next]
            self._next += 1
        self.replies += 1
        text, _ = cut_at_stop(text, settings.stop)
        prompt = sum(len(m["content"].split()) for m in messages)  # words stand in for tokens
        return Reply(text, prompt, len(text.split()), time.perf_counter() - start)
