"""MAESTRO's A2/A7/A8 ablation (Sections 4.1, 5.3, Appendix A.8) on the Hangzhou network: the runner.

==========  ===============  ==================================================================
config      curriculum mode  reward MADDPG trains on
==========  ===============  ==================================================================
A0          none             environment template reward, on the real flow (plain MADDPG)
A2          llm_adaptive     environment template reward (flow + wait + pressure)
A7          llm_adaptive     (1 - w(d)) r_env + w(d) * 170.0 * r_LLM while a generated reward is active
A8          llm              environment template reward
==========  ===============  ==================================================================

A0 has no curriculum and no architect: every training episode is the real Hangzhou flow (its difficulty is
NaN), the fairest baseline for what the curriculum adds. The architect is an LLM (``llm``, e.g. SmolLM2) or
the reference architect (``llm="reference"``: a rule-based surrogate, not an LLM,
:mod:`marlinkit.maestro.reference_architect`), which answers the same prompts through the same checks.

One run = one (config, seed): ``episodes`` training episodes of ``episode_seconds`` 1-s steps
with exploring policies, and after every ``eval_every``-th one two evaluation episodes on the same
traffic: the *stochastic* policy (actions sampled from the Gumbel-softmax policy, temperature 1,
the policy the actor loss optimises and the critic values; noise from a generator seeded with
``eval_seed`` alone, so the training noise stream is untouched) and the *greedy* one (argmax of
the logits). Both are stored (``eval_*_stochastic``, ``eval_*_greedy``); ``eval_policy`` (default
stochastic) names the one tables and figures report. The choice is deliberate: the actor of a
1-s decision loop learns a distribution over phases, and its argmax, asked every second, can keep
one phase and starve the other approaches (untrained: greedy return -205 against stochastic -55 on
the 360-s evaluation episode), so the greedy policy is not the policy that was trained.

The paper's algorithm is :func:`dual_loop`: one run, the outer curriculum/architect loop around
the inner MADDPG episodes. Each run executes in a fresh process of its own (libsumo holds one
simulation per process), on local processes or Ray (``executor``, see :mod:`marlinkit.executors`), and hands its
tables back: this process writes them as each run finishes. Runs resume per completed run (a run
whose sidecar exists with the same configuration is loaded, not recomputed) and, with
``checkpoint_every``, from the last checkpoint of an interrupted run (learner, optimisers, replay
buffer, random states, curriculum and reward schedule, generation log): the resumed run gives the
numbers an uninterrupted one would.

A7 *follows* A2: while no generated reward is active, A7's shaped reward is the environment's and it
trains, to the bit, as A2 of the same seed does (the same contexts, updates and evaluations). So when
A2's run of that seed is finished, :func:`run_ablation` runs A7 as its outer loop alone over A2's
episodes (its architect replays A2's replies; its reward events ask the LLM and the sandbox as a full
run does), and trains A7 in full only from the first generated reward the sandbox accepts: the run
it writes is the one a full run writes, every column but the wall times (tested at smoke scale).

Every episode's return is reported as a *score*, calibrated on the traffic it was measured on
(165 = max-pressure, 0 = fixed-time; see :mod:`marlinkit.maestro.curriculum_env`). Training rows:
the run measures both controllers on each training episode's context and seed
(``fixed_time_return``, ``max_pressure_return``), and the difficulty rules of Section 4.2 run on
that score. Evaluation rows: :func:`~marlinkit.maestro.curriculum_env.calibrate` measures both once
on the evaluation episode (real flow, ``eval_seed``). Tables report both score and raw return.

Other readings (also in the notebooks): the evaluation episodes run on the first
``episode_seconds`` of the real Hangzhou flow (the target domain; the same traffic for every
config and evaluation, so learning curves compare policies, not curricula); final performance is
the mean score of the last ``final_window`` training episodes (the paper: episodes 180-199 of
"training rewards extracted from simulation logs"); traffic metrics come from the evaluation
episodes in that window. r_LLM is evaluated per intersection and second from
:class:`~marlinkit.maestro.curriculum_env.RewardInputs`, whose waiting-time and delay fields are estimates (see there).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from marlinkit import executors, paths, presets
from marlinkit.algos.maddpg_overrides import MADDPGOverrides
from marlinkit.envs.traffic.context import TrafficContext
from marlinkit.maestro import checkpoint, curriculum
from marlinkit.maestro.curriculum_env import (
    Calibration,
    CurriculumEnv,
    baseline_episodes,
    calibrate,
    calibrated_score,
    calibration_config,
    env_config,
)
from marlinkit.progress import Progress
from marlinkit.files import atomic_write_text, read_jsonl
from marlinkit.maestro.results import AblationResults
from marlinkit.runs import ResultStore, config_hash, run_name

PAPER = "maestro"
#: The LLM setting of the reference architect (a surrogate, not an LLM: :mod:`marlinkit.maestro.reference_architect`).
REFERENCE_LLM = "reference"
#: Evaluated policies (as marlinkit.algos.maddpg.EVAL_POLICIES, kept here so importing this module needs no torch).
EVAL_POLICIES = ("stochastic", "greedy")


@dataclass(frozen=True)
class Ablation:
    """One configuration of Section 4.1."""

    name: str
    curriculum_mode: str  # "llm_adaptive", "llm" or "none" (no curriculum: the real flow)
    llm_reward: bool  # whether the LLM-generated auxiliary reward is used (A7)
    label: str


ABLATIONS = {
    "A0": Ablation("A0", "none", False, "A0 (no curriculum + template, real flow)"),
    "A2": Ablation("A2", "llm_adaptive", False, "A2 (LLM curriculum + template)"),
    "A7": Ablation("A7", "llm_adaptive", True, "A7 (full MAESTRO)"),
    "A8": Ablation("A8", "llm", False, "A8 (alt. curriculum + template)"),
}


@dataclass(frozen=True)
class Config:
    """The ``maestro`` section: the A2/A7/A8 ablation's settings; hashed into every run's sidecar."""

    seeds: tuple[int, ...] = (200, 300, 400, 500)
    """Paper seeds (Section 5.3)."""
    ablations: tuple[str, ...] = ("A2", "A7", "A8")
    """Configurations to run."""
    episodes: int = 200
    """Training episodes per run (paper: 200)."""
    episode_seconds: int = 360
    """1-s steps per episode (paper: 360)."""
    eval_every: int = 2
    """Training episodes between deterministic evaluations (paper: 2)."""
    final_window: int = 20
    """Last training episodes summarised as final performance (paper: 180-199)."""
    workers: int = 2
    """Runs in parallel, one process each."""
    executor: str = "local"
    """"local" processes or "ray" (marlinkit.executors)."""
    ray_address: str | None = None
    """Ray cluster to join (e.g. "auto"); None starts a local instance of ``workers`` CPUs."""
    llm: str = "smollm2"
    """LLM setting (marlinkit.llm.config); "scripted" plays the protocol without a model."""
    record: bool = False
    """Call the model on a transcript miss and record it (False: strict replay, a miss is an error)."""
    engine: str = "sumo"
    """Traffic engine."""
    target_paper: float = 165.0
    """The paper's curriculum target, on its reward scale (Section 4.2): the score's max-pressure level."""
    curriculum: str = "paper"
    """The difficulty rule's target and start (marlinkit.maestro.curriculum.SETTINGS): "paper" (target =
    max-pressure level, start at the easiest d) or "measured" (target where a measured learner ends, start at
    the real flow's load)."""
    eval_seed: int = 1_000_000
    """SUMO seed of every evaluation episode (and of its stochastic policy's noise)."""
    eval_policy: str = "stochastic"
    """Evaluated policy the tables and figures report ("stochastic" or "greedy"; both are stored)."""
    regen_interval: int = 5
    """A8 ("llm" mode): also regenerate the context every this many episodes."""
    max_attempts: int = 3
    """Context replies tried before the deterministic fallback context."""
    checkpoint_every: int = 0
    """Save a resumable checkpoint every this many episodes (0: resume per run only)."""
    maddpg: MADDPGOverrides = MADDPGOverrides()
    """MADDPGConfig overrides (batch size, update cadence, ...; a preset writes them as a mapping of its fields)."""
    maddpg_setting: str | None = None
    """A named MADDPG setting of the measured sweep (:data:`marlinkit.maestro.sweep.SETTINGS`, e.g. "ue25",
    MADDPGConfig's default) in place of ``maddpg``; its runs, transcripts and outputs are named apart
    (``<name>_maddpg``). None: ``maddpg`` as the preset gives it (the paper preset: Lowe et al.'s defaults)."""

    def __post_init__(self):
        object.__setattr__(self, "seeds", tuple(self.seeds))
        object.__setattr__(self, "ablations", tuple(self.ablations))
        unknown = sorted(set(self.ablations) - set(ABLATIONS))
        if unknown or not self.ablations:
            raise ValueError(f"unknown ablation(s) {unknown}; choose from {sorted(ABLATIONS)}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and non-empty, got {self.seeds}")
        for name in ("episodes", "episode_seconds", "eval_every", "final_window", "workers", "regen_interval"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be >= 0, got {self.checkpoint_every}")
        if self.final_window > self.episodes:
            raise ValueError(f"final_window ({self.final_window}) exceeds episodes ({self.episodes})")
        if self.final_window < self.eval_every:
            raise ValueError("final_window must hold at least one evaluation (>= eval_every)")
        if self.eval_policy not in EVAL_POLICIES:
            raise ValueError(f"eval_policy must be one of {EVAL_POLICIES}, got {self.eval_policy!r}")
        executors.check_executor(self.executor, self.workers)
        curriculum.rule_config(self.curriculum, self.target_paper)  # an unknown setting fails here, by name
        object.__setattr__(self, "maddpg", MADDPGOverrides.of(self.maddpg))
        if self.maddpg_setting is not None:
            from marlinkit.maestro.sweep import SETTINGS

            setting = SETTINGS.get(self.maddpg_setting)
            if setting is None or setting.train_difficulty is not None:
                known = [name for name, s in SETTINGS.items() if s.train_difficulty is None]
                raise ValueError(f"unknown MADDPG setting {self.maddpg_setting!r}; known: {', '.join(known)} "
                                 "(marlinkit.maestro.sweep.SETTINGS; those that train on a fixed context are the sweep's own)")
            object.__setattr__(self, "maddpg", setting.maddpg)


MaestroConfig = Config  # the name before each experiment's settings were its module's ``Config``


# ----- settings of one run ---------------------------------------------------------------------

def _maddpg_config(cfg: Config, seed: int):
    from marlinkit.algos.maddpg import MADDPGConfig

    total = cfg.episodes * cfg.episode_seconds
    defaults = MADDPGConfig()
    overrides = {"buffer_size": min(defaults.buffer_size, total), **cfg.maddpg.given()}
    return MADDPGConfig(seed=seed, eval_every=cfg.eval_every, **overrides)


def _architect_config(cfg: Config, ablation: str):
    """The architect's settings of ``ablation`` (None for A0: no curriculum, no architect)."""
    from marlinkit.maestro.architect import ArchitectConfig

    if ABLATIONS[ablation].curriculum_mode == "none":
        return None
    return ArchitectConfig(mode=ABLATIONS[ablation].curriculum_mode, max_attempts=cfg.max_attempts,
                           regen_interval=cfg.regen_interval)


def run_config(cfg: Config, ablation: str, seed: int, calibration: Calibration) -> dict[str, Any]:
    """What a run's results depend on (hashed into its sidecar)."""
    run_keys = ("episodes", "episode_seconds", "eval_every", "llm", "engine", "eval_seed", "regen_interval",
                "max_attempts", "target_paper")
    return {"ablation": ablation, "seed": seed, **{k: getattr(cfg, k) for k in run_keys},
            "maddpg": _maddpg_config(cfg, seed).key(), "calibration": asdict(calibration),
            "architect": _optional_asdict(_architect_config(cfg, ablation)),
            "curriculum": asdict(rule_config(cfg))}


def architect_backend(cfg: Config):
    """The reference architect for ``llm="reference"`` (a surrogate, not an LLM), None for an LLM setting."""
    if cfg.llm != REFERENCE_LLM:
        return None
    from marlinkit.maestro.reference_architect import ReferenceArchitect

    return ReferenceArchitect()


def _optional_asdict(value) -> dict[str, Any] | None:
    return None if value is None else asdict(value)


def setting_suffix(cfg: Config) -> str:
    """What names a run's folder, transcripts and outputs apart from the preset's own settings: the reference
    architect, an engine other than SUMO, the curriculum rule when it is not the paper's, then the named MADDPG
    setting ("" for the LLM, SUMO, the paper's rule and the preset's MADDPG)."""
    return "_".join(filter(None, ("reference_architect" if cfg.llm == REFERENCE_LLM else "",
                                  "" if cfg.engine == "sumo" else cfg.engine,
                                  "" if cfg.curriculum == "paper" else f"{cfg.curriculum}_curriculum",
                                  cfg.maddpg_setting and f"{cfg.maddpg_setting}_maddpg")))


def output_suffix(cfg: Config) -> str:
    """File-name suffix of the ablation's figures and tables: ``__<setting suffix>``, "" for the preset's settings."""
    return f"__{setting_suffix(cfg)}" if setting_suffix(cfg) else ""


def transcript_name(cfg: Config, ablation: str, seed: int) -> str:
    """The run's LLM transcript: one per (configuration, seed, curriculum setting), since the prompts carry the rule's target."""
    return "_".join(filter(None, ("maestro", ablation, str(seed), setting_suffix(cfg))))


def shared_transcripts(cfg: Config, ablation: str, seed: int) -> tuple[str, ...]:
    """The transcripts of the configurations whose architect asks the same questions as ``ablation``'s (the same
    curriculum mode, seed and settings): while A7's reward is the environment's it trains as A2 does, so it asks
    A2's questions, and a recording run copies A2's recorded replies instead of calling the model again."""
    mode = ABLATIONS[ablation].curriculum_mode
    if mode == "none":
        return ()
    return tuple(transcript_name(cfg, other, seed) for other in ABLATIONS
                 if other != ablation and ABLATIONS[other].curriculum_mode == mode)


def results_root(preset: str, cfg: Config) -> Path:
    """Where a preset's runs live: the paper setting's in ``data/results/maestro/<preset>/``, another's in a subfolder."""
    return paths.results_dir(PAPER, preset) / setting_suffix(cfg)


def rule_config(cfg: Config) -> curriculum.CurriculumConfig:
    """The difficulty rule a run follows (its ``curriculum`` setting, on the ``target_paper`` score scale)."""
    return curriculum.rule_config(cfg.curriculum, cfg.target_paper)


#: The context column of A0's rows (no curriculum: every training episode is the real flow).
REAL_FLOW = "real Hangzhou flow"
#: How the architect's prompt names the score of an episode that has none (curriculum reading 9).
NO_SCORE = "none (max-pressure did no better than fixed-time on that traffic)"


def _stats(scores: list[float], metrics: dict | None, episode: int, target: float) -> dict[str, float]:
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


# ----- one run: the dual loop ------------------------------------------------------------------------

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


def leader_of(ablation: str) -> str | None:
    """The configuration ``ablation`` trains as while no generated reward is active (A7: A2, the same curriculum
    mode on the environment reward); None for a configuration without an LLM reward."""
    spec = ABLATIONS[ablation]
    if not spec.llm_reward:
        return None
    return next(other.name for other in ABLATIONS.values()
                if other.curriculum_mode == spec.curriculum_mode and not other.llm_reward)


@dataclass(frozen=True)
class Leader:
    """A finished run another run follows (:func:`leader_of`): its name, table and the engine version that made it."""

    name: str
    table: pd.DataFrame
    engine_version: str


class LeaderLeft(Exception):
    """A following run's generated reward was accepted at ``episode``: from there it trains apart from its leader."""

    def __init__(self, episode: int):
        super().__init__(f"a generated reward was accepted before episode {episode}")
        self.episode = episode


def _run_job(cfg: Config, ablation: str, seed: int, calibration: Calibration, root: str,
             leader: Leader | None = None) -> dict[str, Any]:
    """One run (see :func:`dual_loop`), following ``leader``'s finished table while it can (see the module's
    docstring), else trained in full; a transcript miss or damaged transcript names the run."""
    from marlinkit.llm.cache import transcript_context

    with transcript_context(run=f"MAESTRO {run_name(ablation, f'seed{seed}')}"):
        if leader is not None:
            try:
                return dual_loop(cfg, ablation, seed, calibration, root, leader=leader)
            except LeaderLeft as left:
                print(f"MAESTRO {run_name(ablation, f'seed{seed}')}: {left}, so it trains in full", flush=True)
        return dual_loop(cfg, ablation, seed, calibration, root)


def dual_loop(cfg: Config, ablation: str, seed: int, calibration: Calibration, root: str,
              leader: Leader | None = None, stop_after: int | None = None) -> dict[str, Any]:
    """MAESTRO for one (configuration, seed): the LLM curriculum's outer loop around MADDPG's inner one.

    Before each episode, the **outer loop** acts on the curriculum's events: the architect writes
    a new traffic context when the difficulty d changed (A8 also every ``regen_interval``
    episodes), and A7's pending reward event asks the synthesiser for reward code (sandboxed).
    The **inner loop** trains MADDPG on one episode of that context (A7: on the shaped reward).
    After it, fixed-time and max-pressure on the same traffic calibrate the episode's score, the
    difficulty rules move d on that score, A7's reward schedule advances, and every
    ``eval_every``-th episode both policies are evaluated on the real flow.

    With ``leader`` (A7 given A2's finished run of the same seed, :func:`leader_of`), the inner loop is
    the leader's episode, checked against the outer loop's context and difficulty, until a generated
    reward is accepted (:class:`LeaderLeft`).

    ``stop_after``: play only the first episodes of the run (``make verify PRESET=paper``); every setting stays
    the full run's, so its rows are the full run's first ones.

    Runs in a fresh process; returns what :func:`_save_run` writes. Only checkpoints are written
    here (under ``root`` on the worker's filesystem), so a Ray cluster's workers need no shared
    filesystem for the results.
    """
    import torch

    from marlinkit.algos.maddpg import MADDPG, env_dims, evaluate, run_episode, seed_everything
    from marlinkit.algos.replay_buffer import ReplayBuffer
    from marlinkit.envs.traffic.env import TrafficSignalEnv
    from marlinkit.llm import config as llm_config
    from marlinkit.maestro import architect as arch

    torch.set_num_threads(1)  # one run per core: more threads only contend
    started = time.perf_counter()
    spec = ABLATIONS[ablation]
    ccfg = rule_config(cfg)
    mcfg = _maddpg_config(cfg, seed)
    seed_everything(seed)
    backend = llm_config.cached_backend(cfg.llm, transcript_name(cfg, ablation, seed), cfg.record,
                                        script=arch.scripted_architect_replies(), model="maestro-architect",
                                        shared=shared_transcripts(cfg, ablation, seed), backend=architect_backend(cfg))
    log = arch.GenerationLog()
    acfg = _architect_config(cfg, ablation)
    base = TrafficSignalEnv(env_config(cfg))
    env = CurriculumEnv(base, ccfg)
    curriculum_on = acfg is not None  # A0: no curriculum, every episode the real flow
    architect = arch.CurriculumArchitect(backend, base.network, acfg, log) if curriculum_on else None
    synth = arch.RewardSynthesizer(backend, acfg, log) if curriculum_on else None
    agents, obs_dim, n_actions = env_dims(base)
    episode_rows = cfg.episode_seconds * len(agents)  # reward calls per training episode
    following = leader is not None
    if following:
        leader_rows = leader.table.set_index("episode", drop=False).to_dict("index")
        learner = buffer = None
    else:
        learner = MADDPG(len(agents), obs_dim, n_actions, mcfg)
        buffer = ReplayBuffer(mcfg.buffer_size, len(agents), obs_dim)
    difficulty = curriculum.initial_difficulty(ccfg)
    state = LoopState(difficulty, curriculum.initial_reward_state(difficulty) if spec.llm_reward else curriculum.RewardState())
    name = run_name(ablation, f"seed{seed}")
    checkpoint_path = Path(root) / f"{name}.checkpoint.pt"
    hashed = config_hash(run_config(cfg, ablation, seed, calibration))
    checkpoints = bool(cfg.checkpoint_every) and not following  # a following run replays in minutes
    saved = checkpoint.resume(checkpoint_path, learner, buffer, hashed) if checkpoints else None
    if saved is not None:  # an interrupted run of this configuration: continue where it stopped
        state, env.context, log.records[:] = saved["loop"], saved["loop"].context, saved["log"]
        if state.reward.source == "llm" and state.reward_source is not None:
            env.set_reward(state.reward_source, synth.episode_ticks(state.reward_source, episode_rows))
    last = cfg.episodes if stop_after is None else min(cfg.episodes, stop_after)
    episodes_done = Progress.episodes(last - state.episode, f"{ablation} seed {seed}")  # > 0 done: resumed
    try:
        for episode in range(state.episode, last):
            # outer loop: the curriculum's and the reward schedule's events, answered by the LLM architect
            d = state.difficulty.difficulty
            stats = _stats(state.scores, state.metrics, episode, ccfg.target)
            t0 = time.perf_counter()
            if state.new_context and curriculum_on:
                state.context, state.context_from_llm = architect.propose(d, stats, episode, seed * 1000 + state.generations,
                                                                          cfg.episode_seconds)
                env.context = state.context
                state.generations += 1
            t1 = time.perf_counter()
            if state.reward.pending:
                state.reward_trigger = state.reward.trigger
                state.reward, state.reward_source = arch.run_reward_event(synth, state.reward, d, stats, episode,
                                                                          seed * 1000 + episode, ccfg)
                env.set_reward(state.reward_source,
                               synth.episode_ticks(state.reward_source, episode_rows) if state.reward_source else 0)
            t2 = time.perf_counter()
            if following:  # the leader's episode, with this run's outer loop in the columns it owns
                if state.reward_source is not None:
                    raise LeaderLeft(episode)
                row = _followed_row(leader_rows[episode], ablation, d, state, spec, ccfg, t1 - t0, t2 - t1)
                state.metrics = {key.removeprefix("train_"): row[key] for key in ("train_throughput", "train_avg_delay_s",
                                                                                  "train_avg_queue")}
            else:
                # inner loop: one MADDPG training episode on that context (A7: the shaped reward)
                env.shaping, env.difficulty, env.reward_state, env.runtime_failure = spec.llm_reward, d, state.reward, None
                env.reward_eval_s = 0.0
                train = run_episode(env, learner, seed + episode, True, buffer, state.steps)
                state.reward = env.reward_state  # a runtime failure may have reverted it to the env reward
                if env.runtime_failure is not None:  # retired: the reason goes to the generation log
                    synth.retire(state.reward_source, env.runtime_failure, episode, d)
                state.steps += train["steps"]
                state.metrics = base.last_metrics
                # the episode's score on its own traffic
                t3 = time.perf_counter()
                baselines = baseline_episodes(base, seed + episode, {"context": state.context})
                t4 = time.perf_counter()
                score = float(calibrated_score(env.env_return, baselines["fixed_time_return"],
                                               baselines["max_pressure_return"], cfg.target_paper))
                row = {"ablation": ablation, "seed": seed, "episode": episode, "difficulty": d if curriculum_on else np.nan,
                       "context_from_llm": bool(state.context_from_llm), "context_new": state.new_context and curriculum_on,
                       "context": state.context.describe() if curriculum_on else REAL_FLOW,
                       "reward_source": state.reward.source if spec.llm_reward else "env", "reward_trigger": state.reward_trigger,
                       "reward_runtime_failure": env.runtime_failure, "w_d": curriculum.weight(d, ccfg) if spec.llm_reward else 0.0,
                       "train_return": train["return"], "env_return": env.env_return, "score": score, **baselines,
                       **{f"train_{k}": v for k, v in state.metrics.items()}, "updates": train["updates"],
                       "sim_s": train["sim_s"] - env.reward_eval_s, "train_s": train["train_s"],
                       "reward_eval_s": env.reward_eval_s, "llm_curriculum_s": t1 - t0, "llm_reward_s": t2 - t1,
                       "baseline_s": t4 - t3}
            # the curriculum's rules on the episode's score
            state.scores.append(row["score"])
            state.reward_trigger = None
            if curriculum_on:
                state.difficulty = curriculum.update_difficulty(state.difficulty, row["score"], ccfg)
            if following:  # the leader's row holds where its rule moved d: this run's must agree
                _check_follows(row, state, name, episode)
            elif curriculum_on:
                row.update(difficulty_next=state.difficulty.difficulty, difficulty_event=state.difficulty.event)
            else:
                row.update(difficulty_next=np.nan, difficulty_event=None)
            if spec.llm_reward:
                state.reward = curriculum.advance_rewards(state.reward, state.difficulty, ccfg)
            state.new_context = curriculum_on and (state.difficulty.changed or (spec.curriculum_mode == "llm"
                                                                                and (episode + 1) % cfg.regen_interval == 0))
            if not following:  # (a followed row holds its leader's evaluation)
                row.update(_evaluate(env, learner, cfg, episode, evaluate, calibration))
            state.rows.append(row)
            state.episode = episode + 1
            episodes_done.update()
            if checkpoints and state.episode % cfg.checkpoint_every == 0 and state.episode < cfg.episodes:
                elapsed = state.elapsed_s + time.perf_counter() - started
                checkpoint.save(checkpoint_path, learner, buffer, hashed, log=log.records,
                                loop=dataclasses.replace(state, elapsed_s=elapsed))
    finally:
        episodes_done.close()
        env.close()
    counts = {f"{kind}_{what}": n for kind in ("context", "reward")
              for what, n in zip(("calls", "accepted"), log.counts(kind))}
    return {"name": name, "table": pd.DataFrame(state.rows), "config": run_config(cfg, ablation, seed, calibration),
            "generations": "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in log.records),
            "provenance": {"engine": cfg.engine, "engine_version": leader.engine_version if following else base.engine.version,
                           "llm": llm_config.label(backend), "llm_setting": cfg.llm,
                           "wall_s": state.elapsed_s + time.perf_counter() - started, **counts,
                           "followed": leader.name if following else None}}


#: Per-episode wall-time columns of a run's table (the cost breakdown of Table 5 and ``bench maddpg``):
#: simulation of the training episode, MADDPG acting and updates, running the generated reward,
#: the curriculum and reward LLM calls, the evaluation episodes (both policies), and the fixed-time
#: and max-pressure episodes that calibrate the training episode's score.
TIMING_COLUMNS = ("sim_s", "train_s", "reward_eval_s", "llm_curriculum_s", "llm_reward_s", "eval_s", "baseline_s")

#: The columns a following run writes itself (its outer loop, and the wall times it spent: its LLM calls' and
#: none on simulation or training); the rest are its leader's episode.
FOLLOWER_COLUMNS = ("ablation", "context_from_llm", "context_new", "reward_source", "reward_trigger",
                    "reward_runtime_failure", "w_d", *TIMING_COLUMNS)


def _followed_row(leader_row: dict[str, Any], ablation: str, d: float, state: LoopState, spec: Ablation,
                  ccfg: curriculum.CurriculumConfig, llm_curriculum_s: float, llm_reward_s: float) -> dict[str, Any]:
    """The row a full run would write for this episode: the leader's, in its column order, with the columns the
    follower owns (:data:`FOLLOWER_COLUMNS`) from its own outer loop."""
    own = {"ablation": ablation, "context_from_llm": bool(state.context_from_llm), "context_new": state.new_context,
           "reward_source": state.reward.source if spec.llm_reward else "env", "reward_trigger": state.reward_trigger,
           "reward_runtime_failure": None, "w_d": curriculum.weight(d, ccfg) if spec.llm_reward else 0.0,
           **dict.fromkeys(TIMING_COLUMNS, 0.0), "llm_curriculum_s": llm_curriculum_s, "llm_reward_s": llm_reward_s}
    row = {**leader_row, **own}
    if row["difficulty"] != d or row["context"] != state.context.describe():
        raise RuntimeError(f"following {leader_row['ablation']} at episode {leader_row['episode']}: its difficulty "
                           f"{row['difficulty']} and context {row['context']!r} are not this run's {d} and "
                           f"{state.context.describe()!r} (the two should train alike: a bug)")
    return row


def _check_follows(row: dict[str, Any], state: LoopState, name: str, episode: int) -> None:
    """The leader's difficulty rule moved d as this run's does on the same score (else the two do not train alike)."""
    event = row["difficulty_event"]
    if row["difficulty_next"] != state.difficulty.difficulty or (event != state.difficulty.event
                                                                 and not (pd.isna(event) and state.difficulty.event is None)):
        raise RuntimeError(f"{name} following its leader at episode {episode}: the leader's difficulty went to "
                           f"{row['difficulty_next']} ({event}), this run's to {state.difficulty.difficulty} "
                           f"({state.difficulty.event}) on the same score (a bug)")


def _save_run(store: ResultStore, run: dict[str, Any]) -> str:
    """Write one finished run's files (the sidecar last: it marks the run complete) and drop its checkpoint."""
    name = run["name"]
    atomic_write_text(store.root / f"{name}.generations.jsonl", run["generations"])
    store.save(name, run["table"], run["config"], **run["provenance"])
    checkpoint.remove(store.root / f"{name}.checkpoint.pt")
    return name



def _evaluate(env: CurriculumEnv, learner, cfg: Config, episode: int, evaluate,
              calibration: Calibration) -> dict[str, Any]:
    """Both policies evaluated on the real flow after every ``eval_every``-th episode (NaN otherwise):
    ``eval_return_<policy>``, ``eval_score_<policy>`` (on the evaluation episode's calibration) and
    ``eval_<metric>_<policy>`` for every traffic metric."""
    if (episode + 1) % cfg.eval_every:
        return {"eval_s": 0.0}
    training_context, env.context, env.shaping = env.context, None, False
    started, out = time.perf_counter(), {}
    for policy in EVAL_POLICIES:
        value = evaluate(env, learner, cfg.eval_seed, policy=policy)
        out.update({f"eval_return_{policy}": value, f"eval_score_{policy}": float(calibration.score(value)),
                    **{f"eval_{k}_{policy}": v for k, v in env.env.last_metrics.items()}})
    env.context = training_context
    return {**out, "eval_s": time.perf_counter() - started}


# ----- the ablation ------------------------------------------------------------------------------

def load_config(preset: str, record: bool | None = None, **overrides: Any) -> Config:
    """A preset's ``maestro`` section with ``overrides``; ``record`` None follows ``$MARLINKIT_RECORD`` (strict replay)."""
    from marlinkit.llm import config as llm_config

    if overrides.get("maddpg_setting") is not None and "maddpg" in overrides:
        raise ValueError(f"give maddpg_setting={overrides['maddpg_setting']!r} or maddpg={overrides['maddpg']!r}, "
                         "not both: a named setting replaces every MADDPG override")
    cfg = dataclasses.replace(presets.get(preset, "maestro", **overrides), record=llm_config.recording(record))
    if cfg.maddpg_setting is not None and cfg.maddpg == presets.get(preset, "maestro").maddpg:
        cfg = dataclasses.replace(cfg, maddpg_setting=None)  # the preset's own MADDPG (paper: "paper"): its runs, not a copy
    return cfg


def run_ablation(preset: str = presets.DEFAULT_PRESET, root: Path | None = None, progress: bool = True,
                 **overrides: Any) -> AblationResults:
    """Run (or load) every (ablation, seed) of a preset; missing runs go to ``executor``, ``workers`` at a time,
    and each run's files are written here as soon as it finishes."""
    from marlinkit.llm.cache import transcript_context

    cfg = load_config(preset, **overrides)
    store = ResultStore(Path(root) if root else results_root(preset, cfg), code=(__name__,))
    runs = [(a, s) for a in cfg.ablations for s in cfg.seeds]
    calibrated = store.is_complete("ablation_calibration", calibration_config(cfg))
    # an uncalibrated ablation has runs to do too: one Ray start for both (none when all is cached)
    with contextlib.nullcontext() if calibrated else executors.session(cfg.executor, cfg.workers, cfg.ray_address):
        calibration, calibration_info = calibrate(cfg, store)
        todo = [(a, s) for a, s in runs if not store.is_complete(run_name(a, f"seed{s}"), run_config(cfg, a, s, calibration))]
        # A7 follows A2 (see the module's docstring): after its leader's runs of this call (a leader finished
        # before is found by _leader in the first batch already)
        following = [(a, s) for a, s in todo if leader_of(a) in cfg.ablations]
        with transcript_context(preset=preset):
            for batch in ([job for job in todo if job not in following], following):
                jobs = [(cfg, a, s, calibration, str(store.root), _leader(store, cfg, a, s, calibration))
                        for a, s in batch]
                executors.run_jobs(_run_job, jobs, cfg.executor, min(cfg.workers, max(len(jobs), 1)), cfg.ray_address,
                                   progress, "MAESTRO runs", fresh_process=True,
                                   on_result=lambda _, run: _save_run(store, run))
    names = [run_name(a, f"seed{s}") for a, s in runs]
    episodes = pd.concat([store.load(n) for n in names], ignore_index=True)
    generations = pd.concat([_load_generations(store.root / f"{n}.generations.jsonl", n) for n in names], ignore_index=True)
    return AblationResults(cfg, preset, episodes, generations, {n: store.load_sidecar(n) for n in names},
                           calibration, calibration_info, store.root, store.load("ablation_calibration"))


run = run_ablation  # every experiment module's entry point is ``run(preset, **overrides)``


def _leader(store: ResultStore, cfg: Config, ablation: str, seed: int, calibration: Calibration) -> Leader | None:
    """The finished run ``ablation`` follows for ``seed`` (pandas reads every float back exactly), None when there is none."""
    leader = leader_of(ablation)
    if leader is None or not store.is_complete(name := run_name(leader, f"seed{seed}"),
                                               run_config(cfg, leader, seed, calibration)):
        return None
    return Leader(name, store.load(name), store.load_sidecar(name)["engine_version"])


def _load_generations(path: Path, name: str) -> pd.DataFrame:
    ablation, seed = name.split("__")
    frame = pd.DataFrame(read_jsonl(path))
    return frame.assign(ablation=ablation, seed=int(seed.removeprefix("seed")))

