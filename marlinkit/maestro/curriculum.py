"""MAESTRO's curriculum and reward-schedule rules (paper Sections 4.2, 4.3 and 5.1), as pure functions.

Each rule maps an immutable state and one episode's outcome to the next state, so a run can be
replayed, checked against hand-worked trajectories and resumed from its JSON (``dataclasses.asdict``).
The LLM calls live in ``marlinkit.maestro.architect``; this module decides *when* to call and *how much*
the generated reward weighs. Nothing here imports torch, an LLM or an environment.

Where the paper's text admits two readings, we took the one below (also stated where it applies):

1. "+5 %" and "-10 %" are steps of 0.05 and 0.10 on the unit difficulty scale, not relative changes:
   Appendix A.2 reports changes of "~0.05-0.10" with d in [0.3, 0.7]; relative steps would give
   0.015-0.07.
2. The five-episode window is rolling: it is evaluated after every episode once it holds five
   returns and is not cleared when d changes. A.2 reports "~80 updates over 200 episodes", one every
   2-3 episodes, which non-overlapping blocks of five (at most 40 decisions) cannot produce.
3. "Two consecutive windows" are the windows ending at two consecutive episodes; the streak starts
   again from zero after an increase (else d would rise after every episode above the bar).
4. "If d remains unchanged for 15 episodes" counts episodes since d last changed, from the start of
   training; a step cancelled by the [0.3, 1.0] clip is no change.
5. The starting difficulty is not stated; ``d_initial`` defaults to the easiest, 0.3.
6. "If three consecutive generations fail" means three consecutive attempts at one regeneration
   event: the architect retries until one passes validation or three have failed, then trains on the
   environment reward until the next trigger.
7. A stagnation-induced increase triggers regeneration only when it actually raised d.
8. Our addition: an accepted reward function that fails at run time during training (sandbox
   error, non-finite or out-of-range value) also reverts to the environment reward until the next
   trigger, as a failed generation does.
9. Our addition: an episode with no score (NaN: on the traffic the architect wrote, max-pressure did no
   better than fixed-time, so the calibrated scale has no span) leaves the score window and the streak
   as they were, and counts toward the plateau clock of reading 4, since d stood unchanged through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from marlinkit.settings import CurriculumSetting, curricula

_EPS = 1e-9  # difficulty values are rounded to 9 decimals; comparisons allow this much slack


@dataclass(frozen=True)
class CurriculumConfig:
    """The constants of Sections 4.2 (difficulty) and 4.3 (reward regeneration and weighting)."""

    target: float = 165.0  # target windowed return; the paper's reward scale, calibrate to ours
    window: int = 5  # episodes in the rolling return window (4.2)
    up_ratio: float = 1.05  # window mean must exceed up_ratio * target (173.25) ...
    up_windows: int = 2  # ... for this many consecutive windows to raise d
    up_step: float = 0.05  # "+5 %": added to d on a raise
    down_ratio: float = 0.95  # a window mean below down_ratio * target (156.75) lowers d
    down_step: float = 0.10  # "-10 %": subtracted from d on a drop
    plateau_episodes: int = 15  # d unchanged this long forces a raise (plateau escape)
    plateau_step: float = 0.05  # size of the forced raise
    d_min: float = 0.3  # lower clip of d (avoids empty traffic); also d_min of w(d)
    d_max: float = 1.0  # upper clip of d (avoids over-saturation); also d_max of w(d)
    d_initial: float = 0.3  # starting difficulty (not stated in the paper)
    regen_delta: float = 0.15  # |d - d at last generation| >= this triggers a new reward (4.3)
    regen_interval: int = 20  # episodes since the last generation that trigger a new reward
    max_failures: int = 3  # failed attempts in a row before falling back to the environment reward
    llm_scale: float = 170.0  # fixed factor bringing r_LLM to the environment reward's scale
    w_min: float = 0.1  # w(d_min): weight of the LLM reward at the easiest difficulty
    w_max: float = 0.5  # w(d_max): weight of the LLM reward at the hardest difficulty

    def __post_init__(self):
        if not 0 <= self.d_min < self.d_max <= 1 or not self.d_min <= self.d_initial <= self.d_max:
            raise ValueError(f"need 0 <= d_min <= d_initial <= d_max <= 1, got {self.d_min}, {self.d_initial}, "
                             f"{self.d_max}")
        for name in ("window", "up_windows", "plateau_episodes", "regen_interval", "max_failures"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("up_step", "down_step", "plateau_step", "regen_delta", "llm_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not (math.isfinite(self.target) and self.down_ratio < self.up_ratio):
            raise ValueError(f"need a finite target and down_ratio < up_ratio, got {self}")
        if not 0 <= self.w_min <= self.w_max <= 1:
            raise ValueError(f"need 0 <= w_min <= w_max <= 1, got {self.w_min}, {self.w_max}")


#: The training score (165 = max-pressure, 0 = fixed-time, each on the episode's own traffic) that a
#: measured learner ends at: plain MADDPG with the paper's defaults (no curriculum, no LLM) trained on
#: the real Hangzhou flow, mean of training episodes 80-99, the last 20 of its first 100 (``data/maestro_sweep/``,
#: setting ``paper``, seed 200: 78.47).
MEASURED_LEARNER_SCORE = 78.47
#: The paper's learners end at 95-97 % of the rule's target (Table 2: 157, 159, 160 against 165; mean 0.962).
PAPER_FINAL_OVER_TARGET = 0.962
#: The real flow's first 360 s bring 299 vehicles; the deterministic context of d = 0.4 brings 306
#: (mean of context seeds 0-4; d = 0.35: 233, d = 0.45: 385).
REAL_FLOW_DIFFICULTY = 0.4

#: Named settings of the difficulty rule (``marlinkit.maestro.ablation.Config.curriculum``), from
#: ``marlinkit/settings/curricula.toml``: each sets :class:`CurriculumConfig`'s target (on the paper's 165 scale) and
#: starting difficulty, described there; the rule itself is unchanged.
SETTINGS: dict[str, CurriculumSetting] = curricula()

#: Where plain MADDPG stands on the real flow, measured on the committed sweep (``data/maestro_sweep/``, setting
#: ``ue25``: the update cadence of ``ue25_openblas``, the same arithmetic to float precision; template reward, no
#: curriculum, no LLM; seeds 200-500, 200 episodes of 360 s): the training score of every episode (the exploring
#: policy's return, calibrated as the curriculum reads it, 0 = fixed-time, 165 = max-pressure on the real flow)
#: averaged per seed, then over the 4 seeds. ``mean``: over all 200 episodes (per seed 61.8, 66.3, 62.9, 78.9);
#: ``final``: over episodes 180-199 (108.8, 106.1, 106.5, 115.9). Measured by
#: ``python -c "from marlinkit.maestro import sweep; print(sweep.learner_levels())"`` (a test recomputes both).
#: Measured on SUMO: on CityFlow, the engine the reference-architect ablation runs on, the same learner scores
#: higher. Its A0 run (plain MADDPG, the same cadence, no curriculum, template reward, real flow) at seed 200
#: averages 93.8 over all 200 episodes and 134.2 over episodes 180-199, against 61.8 and 108.8 for seed 200 here
#: (run ``A0__seed200.csv`` of the folder
#: ``data/results/maestro/paper/reference_architect_cityflow_plain_maddpg_curriculum_ue25_openblas_maddpg/``
#: beside ``data/maestro_sweep/ue25__seed200.csv``, column ``score`` against the sweep's calibrated training return).
#: The two levels are the targets of the curriculum settings ``plain_maddpg`` and ``plain_maddpg_final``
#: (``marlinkit/settings/curricula.toml``), read from there.
PLAIN_MADDPG_SCORE = {"mean": SETTINGS["plain_maddpg"].target, "final": SETTINGS["plain_maddpg_final"].target}


def rule_config(setting: str = "paper", score_scale: float = 165.0) -> "CurriculumConfig":
    """The difficulty rule of a named setting (:data:`SETTINGS`) on a score whose max-pressure level is
    ``score_scale``."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown curriculum setting {setting!r}; choose from {sorted(SETTINGS)}")
    overrides = SETTINGS[setting].overrides()
    target = overrides.pop("target", None)  # on the paper's 165 scale
    return CurriculumConfig(**overrides, target=score_scale if target is None else target * score_scale / 165.0)


def replayed_difficulty(scores, config: "CurriculumConfig") -> np.ndarray:
    """The difficulty before each episode if the rule of ``config`` had read ``scores`` (one run, in order).

    An approximation where d would have moved (the scores were measured at the difficulties the run had), exact
    where it would have stayed where the run was.
    """
    state, out = initial_difficulty(config), []
    for score in scores:
        out.append(state.difficulty)
        state = update_difficulty(state, float(score), config)
    return np.array(out)


@dataclass(frozen=True)
class DifficultyState:
    """Where the difficulty schedule stands after ``episode`` recorded episodes."""

    difficulty: float
    returns: tuple[float, ...] = ()  # the last ``window`` episode returns, oldest first
    above_streak: int = 0  # consecutive full windows with mean above up_ratio * target
    unchanged: int = 0  # episodes since d last changed
    episode: int = 0  # episodes recorded so far
    event: str | None = None  # rule that fired on the last episode: "up", "down", "plateau" or None
    changed: bool = False  # whether the last episode changed d (a clipped step does not)

    def __post_init__(self):
        object.__setattr__(self, "returns", tuple(self.returns))  # accept JSON lists on resume


def initial_difficulty(config: CurriculumConfig = CurriculumConfig()) -> DifficultyState:
    return DifficultyState(difficulty=config.d_initial)


def update_difficulty(state: DifficultyState, episode_return: float,
                      config: CurriculumConfig = CurriculumConfig()) -> DifficultyState:
    """Section 4.2 after one training episode with cumulative return ``episode_return``.

    Raise by ``up_step`` after ``up_windows`` consecutive window means above ``up_ratio * target``;
    drop by ``down_step`` when the window mean is below ``down_ratio * target``; raise by
    ``plateau_step`` when d has not changed for ``plateau_episodes`` episodes; clip to [d_min, d_max].
    Readings 2-4 and 9 (a NaN return: an episode with no score) of the module docstring apply.
    """
    if math.isinf(episode_return):
        raise ValueError(f"episode return must be finite or NaN (no score, reading 9), got {episode_return}")
    d, event, streak = state.difficulty, None, 0
    scored = not math.isnan(episode_return)  # no score (reading 9): the window and its streak wait for the next one
    returns = (state.returns + (float(episode_return),))[-config.window:] if scored else state.returns
    if not scored:
        streak = state.above_streak
    elif len(returns) == config.window:
        mean = sum(returns) / config.window
        if mean > config.up_ratio * config.target:
            streak = state.above_streak + 1
            if streak >= config.up_windows:
                d, event, streak = d + config.up_step, "up", 0
        elif mean < config.down_ratio * config.target:
            d, event = d - config.down_step, "down"
    d = _clip(d, config)
    unchanged = 0 if d != state.difficulty else state.unchanged + 1
    if unchanged >= config.plateau_episodes:
        d, event, unchanged = _clip(d + config.plateau_step, config), "plateau", 0
    return DifficultyState(
        difficulty=d, returns=returns, above_streak=streak, unchanged=unchanged,
        episode=state.episode + 1, event=event, changed=d != state.difficulty,
    )


def _clip(d: float, config: CurriculumConfig) -> float:
    return round(min(max(d, config.d_min), config.d_max), 9)


def difficulty_levels(config: CurriculumConfig = CurriculumConfig(), limit: int = 1000) -> tuple[float, ...]:
    """Every difficulty :func:`update_difficulty` can reach from ``d_initial``, sorted (the exact floats).

    The defaults give the 15 levels 0.3, 0.35, ..., 1.0. The reward sandbox validates on exactly
    these values, so a reward cannot tell validation from training by its ``difficulty`` argument.
    """
    seen, frontier = {config.d_initial}, [config.d_initial]
    while frontier:
        d = frontier.pop()
        for step in (config.up_step, -config.down_step, config.plateau_step):
            level = _clip(d + step, config)
            if level not in seen:
                seen.add(level)
                frontier.append(level)
        if len(seen) > limit:
            raise ValueError(f"more than {limit} reachable difficulties: steps {config.up_step}/{config.down_step}")
    return tuple(sorted(seen))


@dataclass(frozen=True)
class RewardState:
    """Reward-regeneration schedule of A7 (Section 4.3): which reward trains, and when to regenerate."""

    source: str = "env"  # "llm" while an accepted generated function is in use, else "env"
    pending: bool = False  # a regeneration event is open: the architect should (re)try a generation
    trigger: str | None = None  # why the current or last event opened
    generated_at: float = 0.0  # difficulty when the last event opened
    since: int = 0  # training episodes since the last event opened
    failures: int = 0  # failed attempts in the current event


def initial_reward_state(difficulty: DifficultyState) -> RewardState:
    """Before the first episode: an open event, so the first reward function is generated up front."""
    return RewardState(pending=True, trigger="initial", generated_at=difficulty.difficulty)


def regeneration_trigger(state: RewardState, difficulty: DifficultyState,
                         config: CurriculumConfig = CurriculumConfig()) -> str | None:
    """The Section 4.3 trigger that fires now, if any: "stagnation", "difficulty" or "interval"."""
    if difficulty.event == "plateau" and difficulty.changed:
        return "stagnation"
    if abs(difficulty.difficulty - state.generated_at) >= config.regen_delta - _EPS:
        return "difficulty"
    if state.since >= config.regen_interval:
        return "interval"
    return None


def advance_rewards(state: RewardState, difficulty: DifficultyState,
                    config: CurriculumConfig = CurriculumConfig()) -> RewardState:
    """After each episode's difficulty update: count the episode and open an event if a trigger fires."""
    if state.pending:
        raise ValueError("a regeneration event is still open; record its attempts first")
    state = replace(state, since=state.since + 1)
    trigger = regeneration_trigger(state, difficulty, config)
    if trigger is None:
        return state
    return replace(state, pending=True, trigger=trigger, generated_at=difficulty.difficulty, since=0, failures=0)


def record_generation(state: RewardState, accepted: bool, config: CurriculumConfig = CurriculumConfig()) -> RewardState:
    """One generation attempt of the open event; after ``max_failures`` failures use the env reward."""
    if not state.pending:
        raise ValueError("no regeneration event is open")
    if accepted:
        return replace(state, source="llm", pending=False, failures=0)
    failures = state.failures + 1
    if failures >= config.max_failures:
        return replace(state, source="env", pending=False, failures=failures)
    return replace(state, failures=failures)


def record_runtime_failure(state: RewardState) -> RewardState:
    """The active generated reward failed during training: environment reward until the next trigger."""
    return replace(state, source="env")


def weight(difficulty: float, config: CurriculumConfig = CurriculumConfig()) -> float:
    """w(d) = w_min + (d - d_min) / (d_max - d_min) * (w_max - w_min)  (Section 4.3)."""
    if not config.d_min - _EPS <= difficulty <= config.d_max + _EPS:
        raise ValueError(f"difficulty {difficulty} outside [{config.d_min}, {config.d_max}]")
    fraction = (difficulty - config.d_min) / (config.d_max - config.d_min)
    return config.w_min + fraction * (config.w_max - config.w_min)


def combined_reward(r_env, r_llm, difficulty: float, config: CurriculumConfig = CurriculumConfig()):
    """A7's per-step reward (1 - w(d)) r_env + w(d) * 170.0 * r_LLM; arrays broadcast."""
    w = weight(difficulty, config)
    return (1.0 - w) * np.asarray(r_env, dtype=float) + w * config.llm_scale * np.asarray(r_llm, dtype=float)


def training_reward(r_env, r_llm, difficulty: float, state: RewardState, config: CurriculumConfig = CurriculumConfig()):
    """The reward MADDPG trains on: combined while a generated function is active, else r_env.

    A2 and A8 never generate, so their state stays at source "env" and they train on r_env.
    """
    if state.source != "llm":
        return np.asarray(r_env, dtype=float)
    if r_llm is None:
        raise ValueError("source is 'llm' but no r_llm was given")
    return combined_reward(r_env, r_llm, difficulty, config)
