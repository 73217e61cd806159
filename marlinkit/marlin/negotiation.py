"""MARLIN's inter-robot negotiation (paper Section III-B, Fig. 2) as a corridor plan source.

Each robot is its own chat instance with the same system prompt (actions and their coordinate
effects, rules, the grid, the scenario, the reply format). Per move, following the authors'
code: the leader states the task, the other robot proposes a top-level plan (TLP) and a move
for both, the leader critiques or agrees; they alternate until an explicit agreement block or
``max_rounds``; then a forced final query. The agreed moves are simulated with the corridor
core, and the new positions plus any blocked move (as error text) open the next move, until
both robots are at their goals or the steps run out.

Nothing a model writes can break a caller: a reply is parsed tolerantly; a malformed reply gets
one correction prompt; a move that still cannot be read falls back to ``@WAIT``.

Deviation from the authors' code: each move starts fresh chats (system prompt + this move's
task with the last move and any error), instead of one history growing over 50 moves, which
would overflow a small model's context and grow the cost of every call.
"""

from __future__ import annotations

import re
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from marlinkit.config_fields import check_choices
from marlinkit.envs.corridor import core
from marlinkit.envs.corridor.layouts import Layout
from marlinkit.envs.corridor.plans import Plan
from marlinkit.llm.base import ChatBackend, GenerationSettings, Reply

NAMES = ("Alice", "Bob")
AGREE_MARK, STOP_MARK = "@AGREE", "~AGREE"
_ACTION_WORDS = {
    "WAIT": 0, "STAY": 0, "NORTH": 1, "FORWARD": 1, "UP": 1,
    "SOUTH": 2, "BACKWARD": 2, "DOWN": 2, "WEST": 3, "LEFT": 3, "EAST": 4, "RIGHT": 4,
}
_ACTION_RE = r"@?\s*(" + "|".join(_ACTION_WORDS) + r")\b"
_EFFECTS = ("(x, y) -> (x, y)", "(x, y) -> (x, y+1)", "(x, y) -> (x, y-1)", "(x, y) -> (x-1, y)", "(x, y) -> (x+1, y)")

SCENARIOS = {
    "single_slot": "A corridor one cell wide along x=1 with a single side slot at (0, 3). The robots cannot "
                   "pass each other in the corridor: one must step into the slot and wait for the other to pass.",
    "symmetrical_two_slot": "A corridor one cell wide along x=1 with side slots at (0, 3) and (2, 3). One robot "
                            "must step into a slot and wait for the other to pass.",
    "asymmetrical_two_slot": "A corridor one cell wide along x=1 with side slots at (0, 3) and (2, 4). One robot "
                             "must step into a slot and wait for the other to pass.",
    "two_path": "Two parallel corridors, x=0 and x=2 for y 1 to 6, joined to the ends (1, 0)-(1, 1) and "
                "(1, 6)-(1, 7). The robots pass each other by taking different corridors.",
    "maze_like": "A winding path: from (1, 0) east to (2, 0), north along x=2 to (2, 6), then west to (1, 6) "
                 "and north to (1, 7). A dead-end branch (1, 2), (0, 2), (0, 3), (0, 4) leaves the path at "
                 "(2, 2); one robot must wait in it while the other passes.",
}


@dataclass(frozen=True)
class NegotiationConfig:
    """Settings of one negotiation; all of them enter the transcript-cache keys through the prompts."""

    max_rounds: int = 5  # rounds per move, each robot speaking once per round (the authors' limit)
    temperature: float = 0.8  # sampling temperature of every reply (the authors' value)
    max_new_tokens: int = 300  # reply length cap (the authors' value)
    # "first": robot 0 leads every move (the paper's experiments); "random": seeded choice
    leader: Literal["first", "random"] = "first"
    worked_example: bool = True  # open each chat with one worked exchange (small models need it)
    max_wait_streak: int = 3  # rule in the prompt: no robot waits more than this many moves in a row
    max_moves: int = core.EPISODE_STEPS  # moves negotiated per plan at most; afterwards the robots wait
    stall_limit: int = 0  # stop after this many moves in a row that changed no position (0: never, the paper)
    preferences: str = ""  # operator preferences appended to the system prompt

    def __post_init__(self):
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be >= 1, got {self.max_rounds}")
        check_choices(self)
        if not 1 <= self.max_moves <= core.EPISODE_STEPS:
            raise ValueError(f"max_moves must be in 1..{core.EPISODE_STEPS}, got {self.max_moves}")
        if self.stall_limit < 0:
            raise ValueError(f"stall_limit must be >= 0, got {self.stall_limit}")
        GenerationSettings(temperature=self.temperature, max_new_tokens=self.max_new_tokens)


# ----------------------------------------------------------------------------- prompts

def render_grid(layout: Layout) -> str:
    """The grid with coordinate labels, north up, and the free cells listed (small models need both)."""
    head = "     " + " ".join(f"x={x}" for x in range(layout.width))
    rows = [f"y={y}  " + " ".join(f" {'.' if layout.valid[x, y] else '#'} " for x in range(layout.width))
            for y in reversed(range(layout.height))]
    cells = ", ".join(f"({x}, {y})" for x, y in sorted(layout.cells(), key=lambda c: (c[1], c[0])))
    return "\n".join(["NORTH", head, *rows, "SOUTH", "'.' is free, '#' is a wall.", f"Free cells: {cells}"])


def example_turns(names: tuple[str, str], leader: int, me: int) -> list[dict[str, str]]:
    """One worked exchange as earlier chat turns (a few-shot example; small models copy the format from it)."""
    a, b = names
    task = (f"Task (an example in another corridor, with a side cell at (0, 3)): {a} is at (1, 2) and {b} is at "
            f"(1, 4). {a}'s goal is (1, 6) and {b}'s goal is (1, 0). What moves should {a} and {b} take next?")
    proposal = (f"TLP: {b} will step into the side cell (0, 3) so that {a} can pass.\n"
                f"{a}: @WAIT - {a} waits at (1, 2) while {b} makes room.\n"
                f"{b}: @SOUTH - {b} moves to (1, 3), next to the side cell.")
    agreement = f"Agreed {a} Action: @WAIT\nAgreed {b} Action: @SOUTH\n{AGREE_MARK}"
    if me == leader:
        return [{"role": "user", "content": f"{task}\n\n{names[1 - leader]} says:\n{proposal}"},
                {"role": "assistant", "content": agreement}]
    return [{"role": "user", "content": task}, {"role": "assistant", "content": proposal}]


def system_prompt(layout: Layout, me: int, leader: int, config: NegotiationConfig, names=NAMES) -> str:
    """The shared system prompt, written for robot ``me``; the authors' structure in our words."""
    other = names[1 - me]
    actions = "\n".join(f"* {name} {effect}" for name, effect in zip(core.LLM_ACTION_NAMES, _EFFECTS))
    scenario = SCENARIOS.get(layout.name, "A custom corridor: use the free cells listed above.")
    parts = [
        f"""**Instructions**
You are {names[me]}, a robot. {names[leader]} is the leader. Together with {other}, decide the next action of each \
robot so both reach their goals.

**Available Actions**
Each action moves a robot by one cell:
{actions}

**Rules**
1. Two robots can never be in the same cell.
2. Robots cannot pass through each other; one must move out of the way.
3. Only move to free cells next to the current cell; walls and cells outside the grid block the move.
4. One action per robot per turn.
5. No robot may use @WAIT more than {config.max_wait_streak} turns in a row unless it is at its goal.
6. Do not repeat a move that made no progress.
7. Only the leader {names[leader]} decides when to agree, with the agreement block below.
8. Write in the third person and keep replies short.

**Grid Layout**
{render_grid(layout)}

**Scenario**
{scenario}

**Response Format**
TLP: <top-level plan for both robots, one sentence>
{names[0]}: <ACTION> - <reason>
{names[1]}: <ACTION> - <reason>

**Agreement**
When the actions are agreed, reply with exactly:
Agreed {names[0]} Action: <ACTION>
Agreed {names[1]} Action: <ACTION>
{AGREE_MARK} {STOP_MARK}"""
    ]
    if config.preferences:
        parts.append(f"**Operator preferences**\n{config.preferences}")
    return "\n\n".join(parts)


TASK_RE = re.compile(r"Task: (\w+) is at \((\d+), (\d+)\) and (\w+) is at \((\d+), (\d+)\)\. "
                     r"\w+'s goal is \((\d+), (\d+)\) and \w+'s goal is \((\d+), (\d+)\)")


def task_prompt(positions: np.ndarray, goals: np.ndarray, move: int, last: str | None, errors: list[str],
                names=NAMES) -> str:
    """What the leader says at the start of a move (``TASK_RE`` reads it back).

    It does not mention the move limit, so a shorter run's calls are a prefix of a longer one's
    and replay from the same transcript.
    """
    (ax, ay), (bx, by) = positions.tolist()
    (gax, gay), (gbx, gby) = goals.tolist()
    lines = [f"Task: {names[0]} is at ({ax}, {ay}) and {names[1]} is at ({bx}, {by}). "
             f"{names[0]}'s goal is ({gax}, {gay}) and {names[1]}'s goal is ({gbx}, {gby}). "
             f"This is move {move + 1}."]
    if last:
        lines.append(f"Last move: {last}.")
    lines += [f"The previous move resulted in an error. {e}" for e in errors]
    lines.append(f"What moves should {names[0]} and {names[1]} take next?")
    return "\n".join(lines)


CORRECTION = ("Your reply did not follow the response format. Reply again, using exactly these lines:\n"
              "TLP: <plan>\n{a}: <ACTION> - <reason>\n{b}: <ACTION> - <reason>\n"
              "or, to agree:\nAgreed {a} Action: <ACTION>\nAgreed {b} Action: <ACTION>\n"
              f"{AGREE_MARK} {STOP_MARK}\n"
              "where <ACTION> is one of @NORTH, @SOUTH, @WEST, @EAST, @WAIT.")
FORCED = ("Discussion time is over. Output the agreement block with the agreed actions for {a} and {b}, "
          "exactly in the format shown to you.")


# ----------------------------------------------------------------------------- parser

def parse_action(text: str) -> int | None:
    """The first action word in ``text`` (with or without @, any case, authors' synonyms), as an action id."""
    match = re.search(_ACTION_RE, text, flags=re.IGNORECASE)
    return None if match is None else _ACTION_WORDS[match.group(1).upper()]


def parse_reply(text: str, names=NAMES) -> dict[str, Any]:
    """Read a reply: ``{"kind": "agreement"|"proposal"|"malformed", "actions": [a0, a1] or None, "tlp": str}``.

    An agreement needs both "Agreed <Name> Action:" lines; a proposal needs a "<Name>:" line with
    an action for both robots. Bullets, bold markers and case are ignored.
    """
    clean = text.replace("**", "").replace("*", " ")
    agreed, proposed = [None, None], [None, None]
    tlp = ""
    for line in clean.splitlines():
        stripped = line.strip(" -\t")
        if stripped.upper().startswith("TLP"):
            tlp = stripped.split(":", 1)[-1].strip()
        for i, name in enumerate(names):
            m = re.match(rf"agreed\s+{name}\s+action\s*[:\-]\s*(.*)", stripped, flags=re.IGNORECASE)
            if m and agreed[i] is None:
                agreed[i] = parse_action(m.group(1))
                continue
            m = re.match(rf"{name}\s*:\s*(.*)", stripped, flags=re.IGNORECASE)
            if m and proposed[i] is None:
                proposed[i] = parse_action(m.group(1))
    if None not in agreed:
        return {"kind": "agreement", "actions": agreed, "tlp": tlp}
    if None not in proposed:
        return {"kind": "proposal", "actions": proposed, "tlp": tlp}
    return {"kind": "malformed", "actions": None, "tlp": tlp}


def move_error(names, agent: int, action: int, pos: np.ndarray, other_pos: np.ndarray, layout: Layout) -> str:
    """The authors' error text for a blocked move, fed back at the next move."""
    word, here = core.LLM_ACTION_NAMES[action], tuple(int(v) for v in pos)
    target = tuple(int(v) for v in pos + core.ACTION_DELTAS[action])
    if target == tuple(int(v) for v in other_pos):
        return (f"{names[agent]} cannot take action {word} from {here} when {names[1 - agent]} is at {target} "
                f"as they collide. {names[agent]} must pick a different action or {names[1 - agent]} should "
                "move to a different cell. Do not do this again.")
    return (f"{names[agent]} cannot take action {word} from {here} as {target} is a wall. "
            f"{names[agent]} must pick a different action. Do not do this again.")


# ----------------------------------------------------------------------------- protocol

def _call_seed(seed: int, move: int, call: int) -> int:
    """A distinct, reproducible sampling seed per call (so transcripts replay call by call)."""
    return int(np.random.SeedSequence([seed, move, call]).generate_state(1)[0])


class Negotiation:
    """``PlanSource``: two LLM robots negotiate a joint plan move by move."""

    def __init__(self, backend: ChatBackend, config: NegotiationConfig | None = None, names=NAMES):
        self.backend = backend
        self.config = config or NegotiationConfig()
        self.names = tuple(names)
        # The name enters run configurations (MARLIN's result cache): backend, model and protocol settings.
        settings = ",".join(f"{k}={v}" for k, v in asdict(self.config).items() if v != getattr(NegotiationConfig, k))
        self.name = f"negotiation:{backend.name}:{backend.model}" + (f"[{settings}]" if settings else "")

    def _settings(self, seed: int) -> GenerationSettings:
        return GenerationSettings(self.config.temperature, self.config.max_new_tokens, seed=seed, stop=(STOP_MARK,))

    def make_plan(self, layout: Layout, positions: np.ndarray, steps_left: int = core.EPISODE_STEPS,
                  seed: int | None = None) -> Plan:
        if not 1 <= steps_left <= core.EPISODE_STEPS:
            raise ValueError(f"steps_left must be in 1..{core.EPISODE_STEPS}, got {steps_left}")
        arrays = core.layout_arrays(layout)
        state = core.CorridorState(np.asarray(positions, dtype=np.int64).reshape(1, core.N_AGENTS, 2).copy(),
                                   np.zeros(1, np.int64))
        for agent, (x, y) in enumerate(state.pos[0].tolist()):
            if not layout.is_free(x, y):
                raise ValueError(f"robot {agent} position {(x, y)} is not a free cell of {layout.name!r}")
        steps_left = min(steps_left, self.config.max_moves)
        seed = 0 if seed is None else int(seed)
        rng = np.random.default_rng(seed)
        stats = dict.fromkeys(("llm_calls", "prompt_tokens", "completion_tokens", "replies", "format_ok",
                               "parse_failures", "corrections", "fallbacks", "agreements", "forced_queries",
                               "invalid_moves", "cached_calls"), 0)
        stats["llm_seconds"] = 0.0
        transcript: list[dict[str, Any]] = []
        actions: list[list[int]] = []
        errors: list[str] = []
        last, stalled, start = None, 0, time.perf_counter()
        for move in range(steps_left):
            pos = state.pos[0]
            if np.array_equal(pos, arrays.goals):
                break
            leader = 0 if self.config.leader == "first" else int(rng.integers(2))
            prompts = [system_prompt(layout, me, leader, self.config, self.names) for me in range(2)]
            if move == 0:
                transcript.append({"move": 0, "speaker": "system", "kind": "system_prompt", "text": prompts[leader]})
            task = task_prompt(pos, arrays.goals, move, last, errors, self.names)
            transcript.append({"move": move, "speaker": self.names[leader], "kind": "task", "text": task,
                               "positions": pos.tolist()})
            joint = self._negotiate_move(prompts, leader, task, seed, move, stats, transcript)
            result = core.step(arrays, state, np.asarray([joint]))
            errors = [move_error(self.names, i, joint[i], pos[i], (pos if i == 0 else result.state.pos[0])[1 - i],
                                 layout)
                      for i in range(2) if result.blocked[0, i]]
            stats["invalid_moves"] += len(errors)
            state = core.CorridorState(result.state.pos, state.t)
            actions.append(joint)
            words = [core.LLM_ACTION_NAMES[a] for a in joint]
            last = f"{self.names[0]} {words[0]}, {self.names[1]} {words[1]}"
            transcript.append({"move": move, "speaker": "environment", "kind": "simulated",
                               "text": f"{last} -> {self.names[0]} at {tuple(result.state.pos[0, 0].tolist())}, "
                                       f"{self.names[1]} at {tuple(result.state.pos[0, 1].tolist())}"
                                       + "".join(f"\n{e}" for e in errors),
                               "actions": list(joint), "positions": result.state.pos[0].tolist()})
            stalled = stalled + 1 if np.array_equal(result.state.pos[0], pos) else 0
            if self.config.stall_limit and stalled >= self.config.stall_limit:
                transcript.append({"move": move, "speaker": "environment", "kind": "stalled",
                                   "text": f"no robot moved for {stalled} moves: negotiation stopped"})
                break
        stats.update(moves=len(actions), seconds=time.perf_counter() - start,
                     reached_goals=bool(np.array_equal(state.pos[0], arrays.goals)), config=asdict(self.config),
                     backend=self.backend.name, model=self.backend.model)
        plan = np.asarray(actions, dtype=np.int64).reshape(-1, core.N_AGENTS)
        return Plan(plan, float(core.progress(arrays, state.pos[0]).mean()), self.name, transcript, stats)

    def _ask(self, messages, seed, move, stats, transcript, speaker, kind) -> tuple[str, dict[str, Any]]:
        """One model call, a parse, and at most one correction prompt when the reply is malformed."""
        reply = self._call(messages, seed, move, stats)
        parsed = parse_reply(reply.text, self.names)
        stats["replies"] += 1
        stats["format_ok"] += parsed["kind"] != "malformed"
        transcript.append({"move": move, "speaker": speaker,
                           "kind": kind if parsed["kind"] != "agreement" else "agreement",
                           "text": reply.text, "parsed": parsed})
        if parsed["kind"] != "malformed":
            return reply.text, parsed
        stats["parse_failures"] += 1
        stats["corrections"] += 1
        correction = CORRECTION.format(a=self.names[0], b=self.names[1])
        transcript.append({"move": move, "speaker": "system", "kind": "correction_request", "text": correction})
        retry = messages + [{"role": "assistant", "content": reply.text}, {"role": "user", "content": correction}]
        reply = self._call(retry, seed, move, stats)
        parsed = parse_reply(reply.text, self.names)
        if parsed["kind"] == "malformed":
            stats["parse_failures"] += 1
        transcript.append({"move": move, "speaker": speaker, "kind": "correction" if parsed["kind"] != "agreement"
                           else "agreement", "text": reply.text, "parsed": parsed})
        return reply.text, parsed

    def _call(self, messages, seed, move, stats) -> Reply:
        reply = self.backend.chat([dict(m) for m in messages],
                                  self._settings(_call_seed(seed, move, stats["llm_calls"])))
        stats["llm_calls"] += 1
        stats["prompt_tokens"] += reply.prompt_tokens
        stats["completion_tokens"] += reply.completion_tokens
        stats["llm_seconds"] += reply.seconds
        stats["cached_calls"] += reply.cached
        return reply

    def _negotiate_move(self, prompts, leader, task, seed, move, stats, transcript) -> list[int]:
        """One move: alternate replies (the non-leader first) until agreement, then a forced query; WAIT fallback."""
        speakers = [1 - leader, leader]
        chats = {i: [{"role": "system", "content": prompts[i]}]
                 + (example_turns(self.names, leader, i) if self.config.worked_example else []) for i in range(2)}
        incoming = {speakers[0]: task, speakers[1]: task}  # what each robot has not yet seen
        for turn in range(2 * self.config.max_rounds):
            me = speakers[turn % 2]
            chats[me].append({"role": "user", "content": incoming.pop(me)})
            kind = "proposal" if turn == 0 else "critique"
            text, parsed = self._ask(chats[me], seed, move, stats, transcript, self.names[me], kind)
            chats[me].append({"role": "assistant", "content": text})
            if parsed["kind"] == "agreement":
                stats["agreements"] += 1
                return parsed["actions"]
            other = 1 - me
            said = f"{self.names[me]} says:\n{text}"
            incoming[other] = f"{incoming[other]}\n\n{said}" if other in incoming else said
        stats["forced_queries"] += 1
        forced = FORCED.format(a=self.names[0], b=self.names[1])
        transcript.append({"move": move, "speaker": "system", "kind": "forced_query", "text": forced})
        pending = incoming.get(leader)
        chats[leader].append({"role": "user", "content": f"{pending}\n\n{forced}" if pending else forced})
        _, parsed = self._ask(chats[leader], seed, move, stats, transcript, self.names[leader], "final")
        if parsed["kind"] == "agreement":
            stats["agreements"] += 1
            return parsed["actions"]
        # As in the authors' code, nothing moves without an agreement block.
        stats["fallbacks"] += 1
        transcript.append({"move": move, "speaker": "system", "kind": "fallback",
                           "text": "no agreement: both robots @WAIT"})
        return [0, 0]


# ---------------------------------------------------------------------------------------------
# The protocol played without a model (the scripted backend's MARLIN script)

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
    """A protocol-following robot for the scripted backend (no model): reads the grid and the task from the chat;
    the proposer moves each robot one step along its shortest path unless the other robot is in the way, and the
    leader agrees."""
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
