"""A backend that answers from a script: fixed replies in order, or a function of the chat.

For tests and for teaching the protocol without a model. The default script, ``greedy_robots``,
plays the negotiation format correctly: the proposer moves each robot one step along its
shortest path unless the other robot is in the way, and the leader agrees.
"""

from __future__ import annotations

import re
import time
from collections import deque
from typing import Callable, Sequence

from marlinkit.llm.base import GenerationSettings, LLMError, Reply, check_messages, cut_at_stop

Script = Sequence[str] | Callable[[list[dict[str, str]]], str]


class ScriptedBackend:
    """Replies from ``script``: a list consumed in order (an error when exhausted) or a callable."""

    name = "scripted"

    def __init__(self, script: Script | None = None, model: str | None = None):
        self.script = greedy_robots if script is None else script
        self.model = model or ("greedy-robots" if script is None else "script")
        self._next = 0

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
        text, _ = cut_at_stop(text, settings.stop)
        prompt = sum(len(m["content"].split()) for m in messages)  # words stand in for tokens
        return Reply(text, prompt, len(text.split()), time.perf_counter() - start)


_CELL = re.compile(r"\((\d+), (\d+)\)")


def _next_step(free: set, start: tuple, goal: tuple, other: tuple) -> str:
    """The first step of a shortest path to ``goal``; @WAIT if it is the other robot's cell (or no path)."""
    moves = (("@NORTH", 0, 1), ("@SOUTH", 0, -1), ("@WEST", -1, 0), ("@EAST", 1, 0))
    parent = {start: None}
    queue = deque([start])
    while queue and goal not in parent:
        cell = queue.popleft()
        for word, dx, dy in moves:
            nxt = (cell[0] + dx, cell[1] + dy)
            if nxt in free and nxt not in parent:
                parent[nxt] = (cell, word)
                queue.append(nxt)
    if goal not in parent or goal == start:
        return "@WAIT"
    cell = goal
    while parent[cell][0] != start:
        cell = parent[cell][0]
    return "@WAIT" if cell == other else parent[cell][1]


def greedy_robots(messages: list[dict[str, str]]) -> str:
    """A protocol-following robot: reads the grid and the task from the chat, proposes or agrees."""
    from marlinkit.marlin.negotiation import AGREE_MARK, NAMES, STOP_MARK, TASK_RE

    system = messages[0]["content"]
    free_line = next((line for line in system.splitlines() if line.startswith("Free cells:")), "")
    free = {(int(x), int(y)) for x, y in _CELL.findall(free_line)}
    match = next((m for m in map(TASK_RE.search, (m["content"] for m in reversed(messages))) if m), None)
    if match is None or not free:
        return "I do not see a task."
    a, b = (int(match.group(2)), int(match.group(3))), (int(match.group(5)), int(match.group(6)))
    ga, gb = (int(match.group(7)), int(match.group(8))), (int(match.group(9)), int(match.group(10)))
    moves = ["@WAIT" if a == ga else _next_step(free, a, ga, b), "@WAIT" if b == gb else _next_step(free, b, gb, a)]
    if "says:" in messages[-1]["content"] or "Discussion time is over" in messages[-1]["content"]:
        return (f"Agreed {NAMES[0]} Action: {moves[0]}\nAgreed {NAMES[1]} Action: {moves[1]}\n"
                f"{AGREE_MARK} {STOP_MARK}")
    return (f"TLP: both robots follow their shortest paths.\n{NAMES[0]}: {moves[0]} - towards the goal.\n"
            f"{NAMES[1]}: {moves[1]} - towards the goal.")
