"""MAESTRO's LLM architect (Sections 4.2-4.3): traffic contexts for the curriculum, reward code for A7.

Two generators behind any chat backend (``marlinkit.llm.config``; the paper used GPT-4o-mini):

* :class:`CurriculumArchitect` asks for one JSON :class:`TrafficContext` for the current
  difficulty. ``llm_adaptive`` (A2, A7) prompts with the difficulty, summary statistics and the
  deterministic context of that difficulty as a worked example, and accepts a reply only if it
  parses (:func:`read_json_object`), passes the context schema, and its expected vehicle count lies within
  ``load_tolerance`` of the example's (so d keeps its meaning). ``llm`` (A8) is the paper's "less
  constrained prompting and regeneration": the prompt asks for a novel scenario, sampling is
  hotter, there is no load check (only that the context brings traffic at all: both modes reject
  one with less than one expected vehicle), and the runner also regenerates every ``regen_interval``
  episodes. Each failed reply is retried with the error fed back; after ``max_attempts`` the
  deterministic context for the difficulty (:func:`context_for_difficulty`) is used.
* :class:`RewardSynthesizer` asks for a short ``compute_reward(metrics, difficulty)`` function,
  runs :func:`marlinkit.maestro.sandbox.validate` on it, and :func:`run_reward_event` drives one
  regeneration event through :mod:`marlinkit.maestro.curriculum` (three failures in a row: the
  environment reward until the next trigger).

LLM replies are untrusted input. A context reply is read member by member: SmolLM2-135M often
writes a whole context and then keeps adding keys (copies of the statistics in the prompt) until
the token cap cuts it. The members up to the first one that is cut off, malformed or repeated are
kept and keys outside the schema are dropped; a cut-off reply must still carry every field of the
worked example, what was dropped is logged, and the schema and load checks apply as usual.
Reward replies stop at their code block's closing fence.

Every attempt is appended to a :class:`GenerationLog` with its validation outcome, the raw reply,
the accepted context or code, and the LLM's token counts and latency. The episode length and the
sampling seed of a context are the runner's, never the LLM's (fields the prompt leaves out; an
LLM that sends them anyway has them overwritten).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from marlinkit.config_fields import check_choices
from marlinkit.maestro import curriculum
from marlinkit.envs.traffic.context import (
    D_MAX,
    D_MIN,
    TrafficContext,
    context_for_difficulty,
)
from marlinkit.envs.traffic.data import Network
from marlinkit.maestro import sandbox
from marlinkit.llm.base import ChatBackend, GenerationSettings, LLMError

_log = logging.getLogger(__name__)
CurriculumMode = Literal["llm_adaptive", "llm"]
MODES = get_args(CurriculumMode)
#: Fields of a context the runner owns (episode length, sampling seed): not asked of the LLM.
RUNNER_FIELDS = ("duration_s", "seed")
#: Left out of the prompt's example (the schema still allows them): shorter replies, fewer truncations.
EXAMPLE_OMITS = ("vehicle",)
#: The fields the worked example shows, in its order.
EXAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(TrafficContext)
                       if f.name not in RUNNER_FIELDS + EXAMPLE_OMITS)
_FENCE = re.compile(r"```(?:[a-zA-Z]+)?\s*\n(.*?)```", re.DOTALL)
_WHITESPACE = re.compile(r"\s*")
_OPEN_FENCE = re.compile(r"```(?:[a-zA-Z]+)?[ \t]*\n")
REWARD_GOAL = ("Train 16 cooperating traffic-signal agents on the Hangzhou 4x4 grid to serve as many vehicles "
               "as possible with short queues and little waiting, staying stable as traffic grows harder.")


@dataclass(frozen=True)
class ArchitectConfig:
    """Prompting and validation settings of both generators (one place)."""

    mode: CurriculumMode = "llm_adaptive"  # curriculum mode: "llm_adaptive" (A2, A7) or "llm" (A8)
    max_attempts: int = 3  # context replies tried before the deterministic fallback
    load_tolerance: float = 0.25  # llm_adaptive: expected vehicles within +-25 % of the example's
    regen_interval: int = 5  # llm mode only: also regenerate the context every this many episodes
    temperature_adaptive: float = 0.2  # llm_adaptive context sampling (low: SmolLM2-135M breaks JSON when hotter)
    temperature_free: float = 0.5  # llm (A8) context sampling: hotter, i.e. less constrained
    temperature_reward: float = 0.2  # reward-code sampling (low, as for contexts)
    # reply cap of a context (the example context is ~150 tokens; the rest is cut, see read_json_object)
    context_tokens: int = 200
    reward_tokens: int = 320  # reply cap of a reward function (the example is ~200 tokens)
    # a closing fence and a new line end a reward reply (an opening fence has a language tag)
    reward_stop: tuple[str, ...] = ("\n```\n",)

    def __post_init__(self):
        check_choices(self)
        if self.max_attempts < 1 or self.regen_interval < 1:
            raise ValueError("max_attempts and regen_interval must be >= 1")
        if not 0 < self.load_tolerance < 1:
            raise ValueError(f"load_tolerance must lie in (0, 1), got {self.load_tolerance}")


@dataclass
class GenerationLog:
    """Every generation attempt of one run, in order: one JSON-ready dict each."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def add(self, **record: Any) -> dict[str, Any]:
        self.records.append(record)
        return record

    def counts(self, kind: str) -> tuple[int, int]:
        """(calls, accepted) of ``kind`` ("context" or "reward")."""
        rows = [r for r in self.records if r["kind"] == kind]
        return len(rows), sum(bool(r["accepted"]) for r in rows)


def read_json_object(text: str) -> tuple[dict[str, Any], str]:
    """The first JSON object of a reply, read member by member, and a note on what was dropped.

    Chatter around the object is ignored. Members are kept in order up to the first one that is
    cut off, malformed or a repeated key; the rest of the object is dropped (the note says so,
    '' when the object was read whole). Nothing readable raises ValueError with the parse error.
    """
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in the reply")
    decoder, members, pos = json.JSONDecoder(), {}, start + 1
    skip = _WHITESPACE
    problem = "the object is not closed"
    while True:
        pos = skip.match(text, pos).end()
        if text.startswith("}", pos):
            return members, ""
        try:
            key, pos = decoder.raw_decode(text, pos)
            pos = skip.match(text, pos).end()
            if not text.startswith(":", pos):
                raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
            value, pos = decoder.raw_decode(text, skip.match(text, pos + 1).end())
        except json.JSONDecodeError as error:
            problem = f"{error.msg} at character {error.pos - start}"
            break
        if not isinstance(key, str) or key in members:
            problem = f"repeated key {key!r}" if isinstance(key, str) else "a key that is not a string"
            break
        members[key] = value
        pos = skip.match(text, pos).end()
        if text.startswith(",", pos):
            pos += 1
        elif not text.startswith("}", pos):
            problem = f"Expecting ',' delimiter at character {pos - start}" if pos < len(text) else problem
            break
    if not members:
        raise ValueError(f"invalid JSON: {problem}")
    return members, f"dropped the rest of the object after {len(members)} member(s): {problem}"


def extract_code(text: str) -> str:
    """Python source of a reply: the fenced block defining the function if any, else the text.

    A block whose closing fence is missing (cut by the ``reward_stop`` string or the token cap)
    runs to the end of the reply.
    """
    blocks = _FENCE.findall(text)
    for block in blocks:
        if f"def {sandbox.FUNCTION_NAME}" in block:
            return block.strip() + "\n"
    if not blocks:
        opened = _OPEN_FENCE.search(text)
        blocks = [text[opened.end():]] if opened else []
    return (blocks[0] if blocks else text).strip() + "\n"


def expected_vehicles(context: TrafficContext, network: Network) -> float:
    """Mean number of vehicles the context generates (rates x time profile over its duration)."""
    rates = np.array(list(context.entry_rates_vph(network).values())) / 3600.0
    profile = context.time_profile.factor(np.arange(context.duration_s, dtype=float))
    return float(np.clip(profile[:, None] * rates[None, :], 0.0, 1.0).sum())


def summary_text(stats: Mapping[str, float]) -> str:
    """Statistics for a prompt, rounded so that replays match across tiny float differences."""
    return ", ".join(f"{key} {value:.1f}" if isinstance(value, float) else f"{key} {value}"
                     for key, value in stats.items())


def _llm_fields(context: TrafficContext) -> dict[str, Any]:
    return {k: v for k, v in context.to_dict().items() if k not in RUNNER_FIELDS}


def _settings(temperature: float, tokens: int, seed: int, stop: tuple[str, ...] = ()) -> GenerationSettings:
    return GenerationSettings(temperature=temperature, max_new_tokens=tokens, seed=seed, stop=stop)


def _call(backend: ChatBackend, messages: list[dict[str, str]], settings: GenerationSettings):
    """One chat call: (reply or None, error text, wall seconds).

    A backend failure (``LLMError``: the model or endpoint could not answer while recording) is a
    failed attempt, as in the paper's fallback, and is logged. A transcript that cannot answer (a
    strict-replay miss, a damaged transcript) is not an ``LLMError`` and propagates: a replayed run
    never silently falls back to the deterministic context or the environment reward.
    """
    start = time.perf_counter()
    try:
        reply = backend.chat(messages, settings)
    except LLMError as error:
        _log.warning("LLM call failed; a failed attempt (the paper's fallback follows repeated failures): %s", error)
        return None, f"LLM call failed: {error}", time.perf_counter() - start
    return reply, "", time.perf_counter() - start


def _reply_fields(reply) -> dict[str, Any]:
    if reply is None:
        return {"reply": None, "prompt_tokens": 0, "completion_tokens": 0, "llm_seconds": 0.0, "cached": False}
    return {"reply": reply.text, "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "llm_seconds": reply.seconds, "cached": reply.cached}


class CurriculumArchitect:
    """Difficulty + statistics -> a validated :class:`TrafficContext` (or the fallback for d)."""

    SYSTEM = ("You are the curriculum architect for traffic-signal control on a 4x4 grid of 16 signalised "
              "intersections (Hangzhou). You design the traffic of the next training stage as one JSON object. "
              "Reply with the JSON object only, no explanation.")

    def __init__(self, backend: ChatBackend, network: Network, config: ArchitectConfig = ArchitectConfig(),
                 log: GenerationLog | None = None):
        self.backend, self.network, self.config = backend, network, config
        self.log = log if log is not None else GenerationLog()

    FIELDS = ("demand_level (0-5, multiplies every rate), approach_rates_vph (N, E, S, W: 0-1200 veh/h per entry "
              "road), route_mix (through/left/right shares summing to 1, through >= 0.2), asymmetry (0-2, extra share "
              "of the major axis), major_axis (\"EW\" or \"NS\"), time_profile (kind \"constant\" or \"peak\", "
              "peak_time_s, peak_width_s, peak_factor 1-4), vehicle (length, min_gap, max_speed, accel, decel)")

    def messages(self, difficulty: float, stats: Mapping[str, float], duration_s: int,
                 feedback: str = "") -> list[dict[str, str]]:
        """The chat: a worked exchange (the deterministic context for d as the model's own earlier reply), then the
        request.

        A small model keeps the JSON format far better when the example is a previous assistant turn
        than when it sits inside the request text.
        """
        example = json.dumps({k: v for k, v
                              in _llm_fields(context_for_difficulty(difficulty, duration_s=duration_s)).items()
                              if k not in EXAMPLE_OMITS})
        shot = (f"Difficulty d = {difficulty:.2f} on [{D_MIN}, {D_MAX}] (higher d: more vehicles, more left turns, a "
                "stronger peak). Reply with the traffic context as one JSON object.")
        if self.config.mode == "llm_adaptive":
            request = (f"Recent training: {summary_text(stats)}. Design the next training context for d = "
                       f"{difficulty:.2f}: keep the total demand within 25% of your previous context and vary the "
                       "pattern (major axis, asymmetry, turn shares, peak). Reply with one JSON object.")
        else:
            request = (f"Recent training: {summary_text(stats)}. Invent a new, semantically rich traffic scenario for "
                       f"d = {difficulty:.2f} (for example a commuter peak with a bottleneck on one artery). Reply "
                       "with one JSON object.")
        return [{"role": "system", "content": f"{self.SYSTEM}\nFields: {self.FIELDS}."},
                {"role": "user", "content": shot}, {"role": "assistant", "content": example},
                {"role": "user", "content": request + feedback}]

    def check(self, data: Any, difficulty: float, duration_s: int, seed: int) -> TrafficContext:
        """Schema, traffic (at least one expected vehicle) and, for llm_adaptive, load validation; raises ValueError
        naming the problem.

        Keys outside the schema must be dropped before (:meth:`read_reply`); here they are an error.
        """
        if not isinstance(data, dict):
            # TRY004: a bad reply, retried like the others
            raise ValueError(f"a context must be a JSON object, got {type(data).__name__}")  # noqa: TRY004
        data = {**data, "duration_s": duration_s, "seed": seed}
        try:
            context = TrafficContext.from_dict(data)
        except (TypeError, AttributeError) as error:  # wrong types inside nested fields
            raise ValueError(f"schema: {error}") from None
        load = expected_vehicles(context, self.network)
        if load < 1.0:  # every mode: a context without traffic has no signals to control and no score
            raise ValueError(f"empty: {load:.2f} expected vehicles in {duration_s} s; a context must bring traffic")
        if self.config.mode == "llm_adaptive":
            reference = expected_vehicles(context_for_difficulty(difficulty, seed, duration_s), self.network)
            if abs(load - reference) > self.config.load_tolerance * reference:
                raise ValueError(f"load: {load:.0f} expected vehicles, the difficulty asks for {reference:.0f} "
                                 f"+-{100 * self.config.load_tolerance:.0f}%")
        return context

    def read_reply(self, text: str, difficulty: float, duration_s: int, seed: int) -> tuple[TrafficContext, str]:
        """A checked context from a reply, and a note on what was dropped from it ('' for nothing).

        A reply whose object was cut off counts only if every field of the worked example came
        before the cut: a context is never completed with defaults behind the model's back.
        """
        data, note = read_json_object(text)
        missing = [k for k in EXAMPLE_FIELDS if k not in data]
        if note and missing:
            raise ValueError(f"cut off before the context was complete ({note}); missing {missing}")
        known = {f.name for f in dataclasses.fields(TrafficContext)}
        unknown = [key for key in data if key not in known]
        if unknown:
            data = {k: v for k, v in data.items() if k in known}
            note = "; ".join(filter(None, [note, f"dropped unknown field(s) {unknown}"]))
        return self.check(data, difficulty, duration_s, seed), note

    def propose(self, difficulty: float, stats: Mapping[str, float], episode: int, seed: int,
                duration_s: int = 360) -> tuple[TrafficContext, bool]:
        """A context for ``difficulty`` and whether it came from the LLM (False: the fallback)."""
        cfg = self.config
        temperature = cfg.temperature_adaptive if cfg.mode == "llm_adaptive" else cfg.temperature_free
        feedback = ""
        for attempt in range(cfg.max_attempts):
            messages = self.messages(difficulty, stats, duration_s, feedback)
            reply, error, wall = _call(self.backend, messages,
                                       _settings(temperature, cfg.context_tokens, seed * 1009 + attempt))
            context, note = None, ""
            if reply is not None:
                try:
                    context, note = self.read_reply(reply.text, difficulty, duration_s, seed)
                except ValueError as problem:
                    error = str(problem)
            reason = ("accepted" + (f" ({note})" if note else "")) if context else error
            self.log.add(kind="context", mode=cfg.mode, episode=episode, difficulty=difficulty, attempt=attempt,
                         accepted=context is not None, reason=reason, fallback=False,
                         wall_seconds=wall, context=context.to_dict() if context else None, **_reply_fields(reply))
            if context is not None:
                return context, True
            feedback = f"\nYour previous reply was rejected: {error[:300]}. Reply with a corrected JSON object only."
        fallback = context_for_difficulty(difficulty, seed, duration_s)
        self.log.add(kind="context", mode=cfg.mode, episode=episode, difficulty=difficulty, attempt=cfg.max_attempts,
                     accepted=False, reason=f"fallback after {cfg.max_attempts} failed replies", fallback=True,
                     wall_seconds=0.0, context=fallback.to_dict(), **_reply_fields(None))
        return fallback, False


class RewardSynthesizer:
    """Difficulty + statistics + learning goal -> reward code, checked by the three-stage sandbox."""

    SYSTEM = ("You write reward functions for multi-agent reinforcement learning in traffic-signal control. "
              "Reply with one Python function in a ```python code block and nothing else.")

    def __init__(self, backend: ChatBackend, config: ArchitectConfig = ArchitectConfig(),
                 log: GenerationLog | None = None, limits: sandbox.SandboxLimits | None = None,
                 samples: tuple[Mapping[str, Any], np.ndarray] | None = None, goal: str = REWARD_GOAL):
        self.backend, self.config, self.goal = backend, config, goal
        self.limits = limits or sandbox.SandboxLimits()
        self.samples = samples  # None: sandbox.validation_rows() (a real episode + synthetic edge cases)
        self.log = log if log is not None else GenerationLog()
        self.accepted: set[str] = set()  # sources this synthesizer validated and accepted

    def refusal(self, source: str) -> str | None:
        """Why the checker refuses ``source`` now (None: it accepts it).

        For a run resumed from a checkpoint: a source this synthesizer did not validate is validated again,
        which gives the same verdict (validation is deterministic); one written under an older checker may be
        refused, and training then falls back to the environment reward and logs the retirement.
        """
        if source not in self.accepted:
            verdict = sandbox.validate(source, self.samples, self.limits)
            if not verdict.accepted:
                return f"{verdict.stage}: {verdict.reason}"
            self.accepted.add(source)
        return None

    def retire(self, source: str, reason: str, episode: int, difficulty: float) -> None:
        """Log a reward retired during training (budget, crash or bad value): kind ``retire``."""
        self.log.add(kind="retire", mode="llm_reward", episode=episode, difficulty=difficulty, attempt=None,
                     trigger=None, accepted=False, reason=f"retired during training: {reason}", fallback=True,
                     wall_seconds=0.0, stage="execution", source=source, verdict=None, **_reply_fields(None))

    def messages(self, difficulty: float, stats: Mapping[str, float], feedback: str = "") -> list[dict[str, str]]:
        """The chat: a worked exchange (the example function as the model's earlier reply), then the request."""
        fields = "\n".join(f"- {f.name}: {f.doc} (about {f.low:g} to {f.high:g})" for f in sandbox.REWARD_FIELDS)
        example = Path(sandbox.__file__).with_name("reward_example.py").read_text()
        example = example[example.index("def "):]
        shot = (f"Write `def {sandbox.FUNCTION_NAME}(metrics, difficulty):` returning a float in [-1, 1] for one "
                f"intersection and one second. `metrics` is a dict with these floats:\n{fields}\n{self.language()}")
        request = (f"Learning goal: {self.goal}\nCurriculum difficulty d = {difficulty:.2f} on [{D_MIN}, {D_MAX}]. "
                   f"Training statistics: {summary_text(stats)}.\nWrite an improved {sandbox.FUNCTION_NAME} for this "
                   "stage, in a ```python block.")
        return [{"role": "system", "content": self.SYSTEM}, {"role": "user", "content": shot},
                {"role": "assistant", "content": f"```python\n{example}```"},
                {"role": "user", "content": request + feedback}]

    def language(self) -> str:
        """The prompt's statement of the reward language (:mod:`marlinkit.maestro.sandbox.language`)."""
        phase = ("" if self.limits.phase_terms else
                 " The reward must not depend on `phase` or `phase_duration`.")
        return ("Write it in this subset of Python: float arithmetic (+ - * / ** ), comparisons, `and`/`or`/`not`, "
                "`if`/`elif`/`else`, `x if c else y`, local variables, `return`, `metrics[\"name\"]` with a literal "
                "name, `difficulty`, the functions " + ", ".join(sorted(sandbox.FUNCTIONS)) + " (also as "
                "`math.exp` etc.) and small helper functions of your own (no recursion). Not allowed: loops, "
                "lists, dicts, sets, tuples, other strings, attributes, keyword arguments, default values, imports. "
                "The reward must not rise with queue_length, waiting_time or delay, must not fall with throughput, "
                "and must not pay for a jammed intersection." + phase)

    def attempt(self, difficulty: float, stats: Mapping[str, float], episode: int, seed: int, number: int,
                feedback: str = "", trigger: str | None = None) -> tuple[str | None, str]:
        """One generation: (accepted source or None, rejection reason)."""
        messages = self.messages(difficulty, stats, feedback)
        settings = _settings(self.config.temperature_reward, self.config.reward_tokens, seed * 1009 + number,
                             self.config.reward_stop)
        reply, error, wall = _call(self.backend, messages, settings)
        source, verdict = None, None
        if reply is not None:
            source = extract_code(reply.text)
            verdict = sandbox.validate(source, self.samples, self.limits)
            error = "accepted" if verdict.accepted else f"{verdict.stage}: {verdict.reason}"
            if verdict.accepted:
                self.accepted.add(source)
        accepted = bool(verdict and verdict.accepted)
        self.log.add(kind="reward", mode="llm_reward", episode=episode, difficulty=difficulty, attempt=number,
                     trigger=trigger, accepted=accepted, reason=error, fallback=False, wall_seconds=wall,
                     stage=verdict.stage if verdict else "llm", source=source,
                     verdict=verdict.to_dict() if verdict else None, **_reply_fields(reply))
        return (source if accepted else None), error


def run_reward_event(synth: RewardSynthesizer, state: curriculum.RewardState, difficulty: float,
                     stats: Mapping[str, float], episode: int, seed: int,
                     config: curriculum.CurriculumConfig | None = None,
                     ) -> tuple[curriculum.RewardState, str | None]:
    """Attempt generations of the open event until one passes or ``max_failures`` have failed.

    Returns the new state and the accepted source (None when the event fell back to the
    environment reward; the log then ends with a ``fallback`` record).
    """
    config = config or curriculum.CurriculumConfig()
    feedback = ""
    while state.pending:
        source, error = synth.attempt(difficulty, stats, episode, seed, state.failures, feedback, state.trigger)
        state = curriculum.record_generation(state, source is not None, config)
        if source is not None:
            return state, source
        feedback = f"\nYour previous function was rejected ({error[:300]}). Write a corrected function."
    synth.log.add(kind="reward", mode="llm_reward", episode=episode, difficulty=difficulty, attempt=state.failures,
                  trigger=state.trigger, accepted=False, reason=f"environment reward after {state.failures} failures",
                  fallback=True, wall_seconds=0.0, stage=None, source=None, verdict=None, **_reply_fields(None))
    return state, None


def scripted_architect_replies(context_reply: Callable[[float], str] | None = None,
                               reward_reply: str | None = None) -> Callable[[list[dict[str, str]]], str]:
    """A script for :class:`~marlinkit.llm.backends.scripted.ScriptedBackend` that plays both generators correctly.

    Both generators get their worked example back (the deterministic context for d, valid by
    construction; the example reward function) unless ``context_reply`` maps the difficulty to
    another text or ``reward_reply`` replaces the function. For the smoke preset and tests: no model, real protocol.
    """
    def script(messages: list[dict[str, str]]) -> str:
        if messages[0]["content"] == RewardSynthesizer.SYSTEM:
            return messages[2]["content"] if reward_reply is None else reward_reply
        if context_reply is not None:
            return context_reply(float(re.search(r"d = ([0-9.]+)", messages[1]["content"]).group(1)))
        return messages[2]["content"]
    return script

