"""What one run of the dual loop carries and writes: its state between episodes, one episode's row, the wall times
of an episode's parts, and the statistics the architect's prompts show."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marlinkit.envs.traffic.context import TrafficContext
from marlinkit.maestro import curriculum

#: Per-episode wall-time columns of a run's table (the cost breakdown of Table 5 and ``bench maddpg``):
#: simulation of the training episode, MADDPG acting and updates, running the generated reward,
#: the curriculum and reward LLM calls, the evaluation episodes (both policies), and the fixed-time
#: and max-pressure episodes that calibrate the training episode's score.
TIMING_COLUMNS = ("sim_s", "train_s", "reward_eval_s", "llm_curriculum_s", "llm_reward_s", "eval_s", "baseline_s")

#: The columns a following run writes itself (its outer loop, and the wall times it spent: its LLM calls' and
#: none on simulation or training); the rest are its leader's episode.
FOLLOWER_COLUMNS = ("ablation", "context_from_llm", "context_new", "reward_source", "reward_trigger",
                    "reward_runtime_failure", "w_d", *TIMING_COLUMNS)

#: The context column of A0's rows (no curriculum: every training episode is the real flow).
REAL_FLOW = "real Hangzhou flow"
#: How the architect's prompt names the score of an episode that has none (curriculum reading 9).
NO_SCORE = "none (max-pressure did no better than fixed-time on that traffic)"


class Timer:
    """Wall time per part of an episode, by column name (:data:`TIMING_COLUMNS`): ``with timer("llm_reward_s"):``
    adds the block's seconds; a part never timed reads 0."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, column: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(column, time.perf_counter() - started)

    def add(self, column: str, seconds: float) -> None:
        if column not in TIMING_COLUMNS:
            raise KeyError(f"{column!r} is not a timing column ({', '.join(TIMING_COLUMNS)})")
        self.seconds[column] = self.seconds.get(column, 0.0) + seconds

    def __getitem__(self, column: str) -> float:
        return self.seconds.get(column, 0.0)


@dataclass
class EpisodeRecord:
    """One training episode of a run: its row of the run's table (:meth:`row`, in the table's column order)."""

    ablation: str
    seed: int
    episode: int
    difficulty: float  # the difficulty d the episode's context was written for (NaN: no curriculum, A0)
    context_from_llm: bool  # the context is the LLM's (False: the deterministic fallback)
    context_new: bool  # the architect wrote the context before this episode
    context: str  # the training traffic, described (A0: REAL_FLOW)
    reward_source: str  # the reward MADDPG trained on: "env", "llm" (A7's generated reward active) or "fallback"
    reward_trigger: str | None  # what opened the reward event before this episode (None: no event)
    reward_runtime_failure: str | None  # why the generated reward was retired during the episode
    w_d: float  # the generated reward's weight at d (A7; 0 otherwise)
    train_return: float  # return of the reward MADDPG trained on
    env_return: float  # return of the environment reward, which the score calibrates
    score: float  # env_return on the episode's calibration (0 = fixed-time, target = max-pressure)
    baselines: dict[str, float]  # fixed-time and max-pressure on the episode's traffic and seed: returns, metrics
    train_metrics: dict[str, float]  # traffic metrics of the training episode
    updates: int  # MADDPG updates during the episode
    timer: Timer  # wall times of the episode's parts
    difficulty_next: float = np.nan  # where the difficulty rule moved d on this episode's score
    difficulty_event: str | None = None  # the rule's event ("up", "down", ...; None: d stayed)
    evaluation: dict[str, float] = field(default_factory=dict)  # eval_<quantity>_<policy> after the episode
    leader_row: dict[str, Any] | None = None  # a following run's episode: its leader's row (A7 following A2)

    def own_columns(self) -> dict[str, Any]:
        """The columns this run's outer loop writes (:data:`FOLLOWER_COLUMNS`)."""
        return {"ablation": self.ablation, "context_from_llm": self.context_from_llm, "context_new": self.context_new,
                "reward_source": self.reward_source, "reward_trigger": self.reward_trigger,
                "reward_runtime_failure": self.reward_runtime_failure, "w_d": self.w_d,
                **{column: self.timer[column] for column in TIMING_COLUMNS}}

    def row(self) -> dict[str, Any]:
        """The table row: a trained episode's columns, or a followed one's leader row under this run's own columns."""
        if self.leader_row is not None:
            return {**self.leader_row, **self.own_columns()}
        return {"ablation": self.ablation, "seed": self.seed, "episode": self.episode, "difficulty": self.difficulty,
                "context_from_llm": self.context_from_llm, "context_new": self.context_new, "context": self.context,
                "reward_source": self.reward_source, "reward_trigger": self.reward_trigger,
                "reward_runtime_failure": self.reward_runtime_failure, "w_d": self.w_d,
                "train_return": self.train_return, "env_return": self.env_return, "score": self.score, **self.baselines,
                **{f"train_{k}": v for k, v in self.train_metrics.items()}, "updates": self.updates,
                **{column: self.timer[column] for column in TIMING_COLUMNS if column != "eval_s"},
                "difficulty_next": self.difficulty_next, "difficulty_event": self.difficulty_event,
                **self.evaluation, "eval_s": self.timer["eval_s"]}


@dataclass
class LoopState:
    """What the dual loop carries from one episode to the next; a checkpoint saves it whole."""

    difficulty: curriculum.DifficultyState  # outer loop: the difficulty d and its score window (Section 4.2)
    reward: curriculum.RewardState  # outer loop: A7's reward schedule (Section 4.3; unused by A2 and A8)
    context: TrafficContext | None = None  # the training traffic the architect wrote last
    context_from_llm: bool = False  # whether that context is the LLM's (False: the deterministic fallback)
    new_context: bool = True  # ask the architect for a new context before the next episode
    generations: int = 0  # contexts asked for so far (seeds the next request)
    reward_source: str | None = None  # the generated reward code in use (A7), None: the environment reward
    reward_trigger: str | None = None  # what opened the reward event of the next episode's row
    episode: int = 0  # the next training episode
    steps: int = 0  # environment steps so far (MADDPG's update cadence)
    scores: list[float] = field(default_factory=list)  # calibrated score of every episode so far
    metrics: dict | None = None  # traffic metrics of the last training episode (for the prompts)
    rows: list[dict] = field(default_factory=list)  # result rows so far, one per episode
    elapsed_s: float = 0.0  # wall time of the run's earlier, interrupted sessions


def prompt_stats(scores: list[float], metrics: dict | None, episode: int, target: float) -> dict[str, float]:
    """Summary statistics for the architect's prompts. The window holds the last five scored episodes, as the
    difficulty rule's does; an episode without a score (NaN, curriculum reading 9) is named as such."""
    out: dict[str, float | str] = {"episode": episode}
    scored = [s for s in scores if not math.isnan(s)]
    if scored:
        out[f"window mean score (target {target:g})"] = float(np.mean(scored[-5:]))
    if scores:
        out["last score"] = float(scores[-1]) if not math.isnan(scores[-1]) else NO_SCORE
    if metrics:
        out.update({"throughput": float(metrics["throughput"]), "avg delay s": float(metrics["avg_delay_s"]),
                    "avg queue": float(metrics["avg_queue"])})
    return out
