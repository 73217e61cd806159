"""MAESTRO's A2/A7/A8 ablation (Sections 4.1, 5.3, Appendix A.8) on the Hangzhou network: the runner.

==========  ===============  ==================================================================
config      curriculum mode  reward MADDPG trains on
==========  ===============  ==================================================================
A2          llm_adaptive     environment template reward (flow + wait + pressure)
A7          llm_adaptive     (1 - w(d)) r_env + w(d) * 170.0 * r_LLM while a generated reward is active
A8          llm              environment template reward
==========  ===============  ==================================================================

One run = one (config, seed): ``episodes`` training episodes of ``episode_seconds`` 1-s steps
with exploring policies, and after every ``eval_every``-th one two evaluation episodes on the same
traffic: the *stochastic* policy (actions sampled from the Gumbel-softmax policy, temperature 1,
the policy the actor loss optimises and the critic values; noise from a generator seeded with
``eval_seed`` alone, so the training noise stream is untouched) and the *greedy* one (argmax of
the logits). Both are stored (``eval_*_stochastic``, ``eval_*_greedy``); ``eval_policy`` (default
stochastic) names the one tables and figures report. The choice is deliberate: the actor of a
1-s decision loop learns a distribution over phases, and its argmax, asked every second, can keep
one phase and starve the other approaches (untrained: greedy return -205 against stochastic -55 on
the 360-s evaluation episode), so the greedy policy is not the policy that was trained. Each run executes in a fresh process of its own (libsumo holds one simulation per
process), on local processes or Ray (``executor``, see :mod:`marlinkit.executors`), and hands its
tables back: this process writes them as each run finishes. Runs resume per completed run (a run
whose sidecar exists with the same configuration is loaded, not recomputed) and, with
``checkpoint_every``, from the last checkpoint of an interrupted run (learner, optimisers, replay
buffer, random states, curriculum and reward schedule, generation log): the resumed run gives the
numbers an uninterrupted one would.

The curriculum's target (the paper's 165.0) lives on the paper's reward scale. Ours differs (a
different engine and reward weights), and our returns cross zero, so the multiplicative 1.05 x /
0.95 x target bars cannot be applied to them directly. Every episode's return R is therefore
*calibrated on the traffic it was measured on*: max-pressure (``target_return``) and fixed-time
30 s (``zero_return``) run on the same traffic with the same SUMO seed, and the *score* is
``165.0 * (R - zero_return) / (target_return - zero_return)``: 165 is max-pressure level, 0 is
fixed-time level on that traffic (:func:`calibrated_score`; NaN where max-pressure does not beat fixed-time
there, the scale being undefined). Training rows: the run measures both controllers on each
training episode's context and seed (``fixed_time_return``, ``max_pressure_return``), and the
difficulty rules of Section 4.2 run unchanged on that score with target 165.0 (raise above
173.25, lower below 156.75). Evaluation rows: :func:`calibrate` measures both once on the
evaluation episode (real flow, ``eval_seed``). Tables report both score and raw return.

Other readings (also in the notebooks): the evaluation episodes run on the first
``episode_seconds`` of the real Hangzhou flow (the target domain; the same traffic for every
config and evaluation, so learning curves compare policies, not curricula); final performance is
the mean score of the last ``final_window`` training episodes (the paper: episodes 180-199 of
"training rewards extracted from simulation logs"); traffic metrics come from the evaluation
episodes in that window. r_LLM is evaluated per intersection and second from
:class:`RewardInputs`, whose waiting-time and delay fields are estimates (see there).
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from marlinkit import executors, paths, presets
from marlinkit.maestro import curriculum
from marlinkit.progress import Progress
from marlinkit.envs.traffic.context import TrafficContext
from marlinkit.runs import (
    ResultFileError,
    ResultStore,
    atomic_write_bytes,
    atomic_write_text,
    config_hash,
    read_jsonl,
    run_name,
)

PAPER = "maestro"
#: Evaluated policies (as marlinkit.algos.maddpg.EVAL_POLICIES, kept here so importing this module needs no torch).
EVAL_POLICIES = ("stochastic", "greedy")
#: Traffic metrics copied into the result rows (training, evaluation and baseline episodes).
BASELINE_METRICS = ("avg_delay_s", "avg_queue", "throughput")


@dataclass(frozen=True)
class Ablation:
    """One configuration of Section 4.1."""

    name: str
    curriculum_mode: str  # "llm_adaptive" or "llm"
    llm_reward: bool  # whether the LLM-generated auxiliary reward is used (A7)
    label: str


ABLATIONS = {
    "A2": Ablation("A2", "llm_adaptive", False, "A2 (LLM curriculum + template)"),
    "A7": Ablation("A7", "llm_adaptive", True, "A7 (full MAESTRO)"),
    "A8": Ablation("A8", "llm", False, "A8 (alt. curriculum + template)"),
}


@dataclass(frozen=True)
class MaestroConfig:
    """One ablation's settings (a preset's ``maestro`` section); hashed into every run's sidecar."""

    seeds: tuple[int, ...] = (200, 300, 400, 500)  # paper seeds (Section 5.3)
    ablations: tuple[str, ...] = ("A2", "A7", "A8")  # configurations to run
    episodes: int = 200  # training episodes per run (paper: 200)
    episode_seconds: int = 360  # 1-s steps per episode (paper: 360)
    eval_every: int = 2  # training episodes between deterministic evaluations (paper: 2)
    final_window: int = 20  # last training episodes summarised as final performance (paper: 180-199)
    workers: int = 2  # runs in parallel, one process each
    executor: str = "local"  # "local" processes or "ray" (marlinkit.executors)
    ray_address: str | None = None  # Ray cluster to join (e.g. "auto"); None starts a local instance of ``workers`` CPUs
    llm: str = "smollm2"  # LLM setting (marlinkit.llm.config); "scripted" plays the protocol without a model
    record: bool = False  # call the model on a transcript miss and record it (False: strict replay, a miss is an error)
    engine: str = "sumo"  # traffic engine
    target_paper: float = 165.0  # the paper's curriculum target, on its reward scale (Section 4.2)
    eval_seed: int = 1_000_000  # SUMO seed of every evaluation episode (and of its stochastic policy's noise)
    eval_policy: str = "stochastic"  # evaluated policy the tables and figures report ("stochastic" or "greedy"; both are stored)
    regen_interval: int = 5  # A8 ("llm" mode): also regenerate the context every this many episodes
    max_attempts: int = 3  # context replies tried before the deterministic fallback context
    checkpoint_every: int = 0  # save a resumable checkpoint every this many episodes (0: resume per run only)
    maddpg: dict = field(default_factory=dict)  # MADDPGConfig overrides (batch size, update cadence, ...)

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


# ----- reward inputs and the A7 reward wrapper ---------------------------------------------------

class RewardInputs:
    """The ``metrics`` dict of ``marlinkit.maestro.sandbox.REWARD_FIELDS`` for all 16 agents, each second.

    Exact from the environment: queue_length, throughput, pressure (its reward terms), occupancy
    (mean of the observation's lane occupancies), phase. Estimated, because the environment does
    not expose per-vehicle data: ``phase_duration`` is the observation's elapsed time (capped at
    60 s); ``delay`` is the fraction of incoming vehicles halted (stands in for 1 - speed/limit);
    ``waiting_time`` is a running mean wait of the halted vehicles (+1 s per second for those still
    queued, newcomers at 0).
    """

    def __init__(self, n_agents: int):
        self.n = n_agents
        self.reset()

    def reset(self) -> None:
        self._wait = np.zeros(self.n)
        self._queue = np.zeros(self.n)

    def update(self, obs: np.ndarray, infos: dict, agents: list[str], phases: np.ndarray) -> dict[str, np.ndarray]:
        queue = np.array([infos[a]["queue"] for a in agents], dtype=float)
        lanes = obs[:, :48].reshape(self.n, 12, 4)
        halted_share, occupancy = lanes[:, :, 0].sum(1), lanes[:, :, 1].sum(1)
        stayed = np.minimum(self._queue, queue)
        self._wait = np.where(queue > 0, (self._wait + 1.0) * stayed / np.maximum(queue, 1.0), 0.0)
        self._queue = queue
        return {
            "queue_length": queue,
            "waiting_time": self._wait.copy(),
            "pressure": np.array([infos[a]["pressure"] for a in agents], dtype=float),
            "throughput": np.array([infos[a]["outflow"] for a in agents], dtype=float),
            "delay": np.where(occupancy > 0, np.minimum(halted_share / np.maximum(occupancy, 1e-9), 1.0), 0.0),
            "occupancy": occupancy / 12.0,
            "phase": phases.astype(float),
            "phase_duration": obs[:, -2].astype(float) * 60.0,
        }


class CurriculumEnv:
    """The traffic env as MADDPG sees it: the current context on every reset, and A7's reward.

    ``context`` None means the real Hangzhou flow (evaluation). With ``shaping`` on and an active
    generated reward, rewards are :func:`marlinkit.maestro.curriculum.training_reward`; the environment's
    own return is kept in ``env_return``. Each episode gets a fresh sandbox process with the
    episode's tick budget (``set_reward``), started at its first shaped step. A sandbox failure
    during training (budget, crash, bad value) reverts to the environment reward
    (``curriculum.record_runtime_failure``) and is noted in ``runtime_failure``.
    """

    def __init__(self, env, config: curriculum.CurriculumConfig):
        self.env, self.config = env, config
        self.context = None
        self.shaping = False
        self.difficulty = config.d_initial
        self.reward_state = curriculum.RewardState()
        self.worker = None
        self.reward_source: str | None = None
        self.episode_ticks = 0
        self.inputs = RewardInputs(len(env.possible_agents))
        self.env_return = self.reward_eval_s = 0.0
        self.runtime_failure: str | None = None

    @property
    def possible_agents(self):
        return self.env.possible_agents

    @property
    def agents(self):
        return self.env.agents

    def observation_space(self, agent):
        return self.env.observation_space(agent)

    def action_space(self, agent):
        return self.env.action_space(agent)

    def reset(self, seed=None, options=None):
        self._close_worker()  # a fresh process (and budget) per episode
        self.inputs.reset()
        self.env_return = 0.0
        return self.env.reset(seed=seed, options={"context": self.context})

    def step(self, actions):
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        agents = self.env.possible_agents
        r_env = np.array([rewards[a] for a in agents])
        self.env_return += float(r_env.mean())
        if not (self.shaping and self.reward_state.source == "llm" and self.reward_source is not None):
            return obs, rewards, terminations, truncations, infos
        from marlinkit.maestro.sandbox import RewardWorker, SandboxError

        started = time.perf_counter()
        metrics = self.inputs.update(np.stack([obs[a] for a in agents]), infos, agents, self.env.current_phases)
        try:
            if self.worker is None:
                self.worker = RewardWorker(self.reward_source, total_ticks=self.episode_ticks)
            r_llm = self.worker.evaluate(metrics, self.difficulty)
        except SandboxError as error:
            self.runtime_failure = str(error)
            self.reward_state = curriculum.record_runtime_failure(self.reward_state)
            self.set_reward(None)
            r_llm = None
        shaped = curriculum.training_reward(r_env, r_llm, self.difficulty, self.reward_state, self.config)
        self.reward_eval_s += time.perf_counter() - started
        return obs, dict(zip(agents, shaped.tolist())), terminations, truncations, infos

    def set_reward(self, source: str | None, episode_ticks: int = 0) -> None:
        """The accepted reward code (None: none) and its tick budget per episode."""
        self._close_worker()
        self.reward_source, self.episode_ticks = source, episode_ticks

    def _close_worker(self) -> None:
        if self.worker is not None:
            self.worker.close()
        self.worker = None

    def close(self) -> None:
        self.set_reward(None)
        self.env.close()


# ----- calibration of the target -----------------------------------------------------------------

def calibrated_score(episode_return, zero_return, target_return, target_paper: float = 165.0):
    """``target_paper * (R - zero) / (target - zero)``: 0 at fixed-time, ``target_paper`` at max-pressure
    on the same traffic; NaN where ``target_return <= zero_return`` (no scale on that traffic)."""
    zero, target = np.asarray(zero_return, dtype=float), np.asarray(target_return, dtype=float)
    span = np.where(target > zero, target - zero, np.nan)
    return target_paper * (np.asarray(episode_return, dtype=float) - zero) / span


@dataclass(frozen=True)
class Calibration:
    """The evaluation episode's scale: 165 at ``target_return``, 0 at ``zero_return`` (real flow, ``eval_seed``)."""

    target_return: float  # max-pressure return on the evaluation episode
    zero_return: float  # fixed-time (30 s) return on the same episode
    target_paper: float = 165.0

    def __post_init__(self):
        if not self.target_return > self.zero_return:
            raise ValueError(f"calibration needs target_return > zero_return, got {self.target_return} <= {self.zero_return}")

    def score(self, episode_return):
        return calibrated_score(episode_return, self.zero_return, self.target_return, self.target_paper)


def _env_config(cfg: MaestroConfig, context=None):
    from marlinkit.envs.traffic.env import TrafficEnvConfig

    return TrafficEnvConfig(engine=cfg.engine, context=context, episode_seconds=cfg.episode_seconds)


def _calibration_job(cfg: MaestroConfig) -> dict[str, Any]:
    """Returns and metrics of max-pressure and fixed-time on the evaluation episode (own process)."""
    from marlinkit.envs.traffic.controllers import controller_episode
    from marlinkit.envs.traffic.env import TrafficSignalEnv

    env = TrafficSignalEnv(_env_config(cfg))
    out = {"engine_version": env.engine.version, "context": "real Hangzhou flow", "seed": cfg.eval_seed}
    try:
        for name in ("max-pressure", "fixed-time"):
            total, metrics = controller_episode(env, name, cfg.eval_seed)
            out[name] = {"return": total, **metrics}
    finally:
        env.close()
    return out


def _calibration_config(cfg: MaestroConfig) -> dict[str, Any]:
    keys = ("engine", "episode_seconds", "eval_seed", "target_paper")
    return {"traffic": "real flow", **{k: getattr(cfg, k) for k in keys}}


def calibrate(cfg: MaestroConfig, store: ResultStore) -> tuple[Calibration, dict[str, Any]]:
    """The evaluation episode's calibration, measured once per configuration (cached next to the runs)."""
    config = _calibration_config(cfg)
    if not store.is_complete("ablation_calibration", config):
        result = executors.run_jobs(_calibration_job, [(cfg,)], cfg.executor, 1, cfg.ray_address, progress=False,
                                    fresh_process=True)[0]
        table = pd.DataFrame([{"controller": k, **v} for k, v in result.items() if isinstance(v, dict)])
        store.save("ablation_calibration", table, config, engine_version=result["engine_version"], context=result["context"],
                   seed=result["seed"])
    table = store.load("ablation_calibration").set_index("controller")
    try:
        target, zero = float(table.loc["max-pressure", "return"]), float(table.loc["fixed-time", "return"])
    except (KeyError, TypeError, ValueError) as error:
        raise ResultFileError(f"calibration table {store.table_path('ablation_calibration')} does not hold the "
                              f"max-pressure and fixed-time returns ({type(error).__name__}: {error}); delete it and "
                              "its .json to recompute") from error
    return Calibration(target, zero, cfg.target_paper), store.load_sidecar("ablation_calibration")


# ----- one run -----------------------------------------------------------------------------------

def make_llm(setting: str, purpose: str, record: bool):
    """The architect's backend: ``scripted`` plays both generators; others go through the transcript cache."""
    from marlinkit.llm import config as llm_config

    if setting == "scripted":
        from marlinkit.maestro.architect import scripted_architect_replies
        from marlinkit.llm.backends.scripted import ScriptedBackend

        return ScriptedBackend(scripted_architect_replies(), model="maestro-architect")
    return llm_config.cached_backend(setting, purpose, record=record)


def _maddpg_config(cfg: MaestroConfig, seed: int):
    from marlinkit.algos.maddpg import MADDPGConfig

    total = cfg.episodes * cfg.episode_seconds
    defaults = MADDPGConfig()
    overrides = {"buffer_size": min(defaults.buffer_size, total), **cfg.maddpg}
    return MADDPGConfig(seed=seed, eval_every=cfg.eval_every, **overrides)


def _architect_config(cfg: MaestroConfig, ablation: str):
    from marlinkit.maestro.architect import ArchitectConfig

    return ArchitectConfig(mode=ABLATIONS[ablation].curriculum_mode, max_attempts=cfg.max_attempts,
                           regen_interval=cfg.regen_interval)


def run_config(cfg: MaestroConfig, ablation: str, seed: int, calibration: Calibration) -> dict[str, Any]:
    """What a run's results depend on (hashed into its sidecar)."""
    run_keys = ("episodes", "episode_seconds", "eval_every", "llm", "engine", "eval_seed", "regen_interval",
                "max_attempts", "target_paper")
    return {"ablation": ablation, "seed": seed, **{k: getattr(cfg, k) for k in run_keys},
            "maddpg": asdict(_maddpg_config(cfg, seed)), "calibration": asdict(calibration),
            "architect": asdict(_architect_config(cfg, ablation)),
            "curriculum": asdict(curriculum.CurriculumConfig(target=cfg.target_paper))}


def _stats(scores: list[float], metrics: dict | None, episode: int) -> dict[str, float]:
    """Summary statistics for the architect's prompts."""
    out: dict[str, float] = {"episode": episode}
    if scores:
        out["window mean score (target 165)"] = float(np.mean(scores[-5:]))
        out["last score"] = float(scores[-1])
    if metrics:
        out.update({"throughput": float(metrics["throughput"]), "avg delay s": float(metrics["avg_delay_s"]),
                    "avg queue": float(metrics["avg_queue"])})
    return out


def _run_job(cfg: MaestroConfig, ablation: str, seed: int, calibration: Calibration, root: str) -> dict[str, Any]:
    """One run (see :func:`_train_run`); a transcript miss or damaged transcript names the run."""
    from marlinkit.llm.cache import transcript_context

    with transcript_context(run=f"MAESTRO {run_name(ablation, f'seed{seed}')}"):
        return _train_run(cfg, ablation, seed, calibration, root)


def _train_run(cfg: MaestroConfig, ablation: str, seed: int, calibration: Calibration, root: str) -> dict[str, Any]:
    """Train one (config, seed) in a fresh process; return what :func:`_save_run` writes.

    Only checkpoints are written here (under ``root`` on the worker's filesystem), so a Ray
    cluster's workers need no shared filesystem for the results.
    """
    import torch

    from marlinkit.algos.maddpg import (
        MADDPG,
        env_dims,
        evaluate,
        run_episode,
        seed_everything,
    )
    from marlinkit.algos.replay_buffer import ReplayBuffer
    from marlinkit.envs.traffic.env import TrafficSignalEnv
    from marlinkit.maestro import architect as arch
    from marlinkit.llm.config import label as llm_label

    torch.set_num_threads(1)  # one run per core: more threads only contend
    started = time.perf_counter()
    spec = ABLATIONS[ablation]
    ccfg = curriculum.CurriculumConfig(target=cfg.target_paper)
    mcfg = _maddpg_config(cfg, seed)
    seed_everything(seed)
    backend = make_llm(cfg.llm, f"maestro_{ablation}_{seed}", cfg.record)
    log = arch.GenerationLog()
    acfg = _architect_config(cfg, ablation)
    base = TrafficSignalEnv(_env_config(cfg))
    env = CurriculumEnv(base, ccfg)
    architect = arch.CurriculumArchitect(backend, base.network, acfg, log)
    synth = arch.RewardSynthesizer(backend, acfg, log)
    agents, obs_dim, n_actions = env_dims(base)
    episode_rows = cfg.episode_seconds * len(agents)  # reward calls per training episode
    learner = MADDPG(len(agents), obs_dim, n_actions, mcfg)
    buffer = ReplayBuffer(mcfg.buffer_size, len(agents), obs_dim)
    dstate = curriculum.initial_difficulty(ccfg)
    rstate = curriculum.initial_reward_state(dstate) if spec.llm_reward else curriculum.RewardState()
    rows, scores, metrics, step_count, generation = [], [], None, 0, 0
    need_context, trigger, from_llm, active_source, first, elapsed = True, None, False, None, 0, 0.0
    name = run_name(ablation, f"seed{seed}")
    checkpoint = Path(root) / f"{name}.checkpoint.pt"
    hashed = config_hash(run_config(cfg, ablation, seed, calibration))
    if cfg.checkpoint_every and checkpoint.exists():
        saved = torch.load(checkpoint, weights_only=False)
        if saved["config_hash"] == hashed:
            (rows, scores, metrics, step_count, generation, need_context, trigger, from_llm, active_source, first,
             elapsed) = (saved[k] for k in _LOOP_STATE)
            dstate, rstate = curriculum.DifficultyState(**saved["dstate"]), curriculum.RewardState(**saved["rstate"])
            env.context = TrafficContext.from_dict(saved["context"])
            log.records[:] = saved["log"]
            _restore_learner(learner, buffer, saved)
            if rstate.source == "llm" and active_source is not None:
                env.set_reward(active_source, synth.episode_ticks(active_source, episode_rows))
    episodes_done = Progress.episodes(cfg.episodes - first, f"{ablation} seed {seed}")  # first > 0: resumed
    try:
        for episode in range(first, cfg.episodes):
            d = dstate.difficulty
            stats = _stats(scores, metrics, episode)
            t0 = time.perf_counter()
            if need_context:
                env.context, from_llm = architect.propose(d, stats, episode, seed * 1000 + generation, cfg.episode_seconds)
                generation += 1
            t1 = time.perf_counter()
            if rstate.pending:
                trigger = rstate.trigger
                rstate, active_source = arch.run_reward_event(synth, rstate, d, stats, episode, seed * 1000 + episode, ccfg)
                env.set_reward(active_source, synth.episode_ticks(active_source, episode_rows) if active_source else 0)
            t2 = time.perf_counter()
            env.shaping, env.difficulty, env.reward_state, env.runtime_failure = spec.llm_reward, d, rstate, None
            env.reward_eval_s = 0.0
            train = run_episode(env, learner, seed + episode, True, buffer, step_count)
            rstate = env.reward_state  # a runtime failure may have reverted it to the env reward
            if env.runtime_failure is not None:  # retired: the reason goes to the generation log
                synth.retire(active_source, env.runtime_failure, episode, d)
            step_count += train["steps"]
            metrics = base.last_metrics
            t3 = time.perf_counter()
            baselines = baseline_episodes(base, seed + episode, {"context": env.context})
            t4 = time.perf_counter()
            score = float(calibrated_score(env.env_return, baselines["fixed_time_return"],
                                           baselines["max_pressure_return"], cfg.target_paper))
            scores.append(score)
            row = {"ablation": ablation, "seed": seed, "episode": episode, "difficulty": d,
                   "context_from_llm": bool(from_llm), "context_new": need_context, "context": env.context.describe(),
                   "reward_source": rstate.source if spec.llm_reward else "env", "reward_trigger": trigger,
                   "reward_runtime_failure": env.runtime_failure, "w_d": curriculum.weight(d, ccfg) if spec.llm_reward else 0.0,
                   "train_return": train["return"], "env_return": env.env_return, "score": score, **baselines,
                   **{f"train_{k}": v for k, v in metrics.items()}, "updates": train["updates"],
                   "sim_s": train["sim_s"] - env.reward_eval_s, "train_s": train["train_s"],
                   "reward_eval_s": env.reward_eval_s, "llm_curriculum_s": t1 - t0, "llm_reward_s": t2 - t1,
                   "baseline_s": t4 - t3}
            trigger = None
            dstate = curriculum.update_difficulty(dstate, score, ccfg)
            row.update(difficulty_next=dstate.difficulty, difficulty_event=dstate.event)
            if spec.llm_reward:
                rstate = curriculum.advance_rewards(rstate, dstate, ccfg)
            need_context = dstate.changed or (spec.curriculum_mode == "llm" and (episode + 1) % cfg.regen_interval == 0)
            row.update(_evaluate(env, learner, cfg, episode, evaluate, calibration))
            rows.append(row)
            episodes_done.update()
            if cfg.checkpoint_every and (episode + 1) % cfg.checkpoint_every == 0 and episode + 1 < cfg.episodes:
                first, now = episode + 1, time.perf_counter()
                loop = dict(zip(_LOOP_STATE, (rows, scores, metrics, step_count, generation, need_context, trigger,
                                              from_llm, active_source, first, elapsed + now - started)))
                _save_checkpoint(checkpoint, learner, buffer, config_hash=hashed, dstate=asdict(dstate),
                                 rstate=asdict(rstate), context=env.context.to_dict(), log=log.records, **loop)
    finally:
        episodes_done.close()
        env.close()
    counts = {f"{kind}_{what}": n for kind in ("context", "reward")
              for what, n in zip(("calls", "accepted"), log.counts(kind))}
    return {"name": name, "table": pd.DataFrame(rows), "config": run_config(cfg, ablation, seed, calibration),
            "generations": "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in log.records),
            "provenance": {"engine": cfg.engine, "engine_version": base.engine.version, "llm": llm_label(backend),
                           "llm_setting": cfg.llm, "wall_s": elapsed + time.perf_counter() - started, **counts}}


def _save_run(store: ResultStore, run: dict[str, Any]) -> str:
    """Write one finished run's files (the sidecar last: it marks the run complete) and drop its checkpoint."""
    name = run["name"]
    atomic_write_text(store.root / f"{name}.generations.jsonl", run["generations"])
    store.save(name, run["table"], run["config"], **run["provenance"])
    (store.root / f"{name}.checkpoint.pt").unlink(missing_ok=True)
    return name


#: Per-episode wall-time columns of a run's table (the cost breakdown of Table 5 and ``bench maddpg``):
#: simulation of the training episode, MADDPG acting and updates, running the generated reward,
#: the curriculum and reward LLM calls, the evaluation episodes (both policies), and the fixed-time
#: and max-pressure episodes that calibrate the training episode's score.
TIMING_COLUMNS = ("sim_s", "train_s", "reward_eval_s", "llm_curriculum_s", "llm_reward_s", "eval_s", "baseline_s")
#: Loop variables of ``_run_job`` a checkpoint holds, in order.
_LOOP_STATE = ("rows", "scores", "metrics", "step_count", "generation", "need_context", "trigger", "from_llm",
               "active_source", "first", "elapsed")
_NETWORKS = ("actor", "critic", "target_actor", "target_critic", "actor_opt", "critic_opt")
_BUFFER = ("obs", "next_obs", "actions", "rewards", "terminated")


def _save_checkpoint(path: Path, learner, buffer, **state: Any) -> None:
    """Everything a run needs to continue exactly where it stopped, written atomically."""
    import io
    import random

    import torch

    state.update({k: getattr(learner, k).state_dict() for k in _NETWORKS})
    state.update(generator=learner.generator.get_state(), rng=learner.rng.bit_generator.state,
                 buffer={k: getattr(buffer, k)[: buffer.size].copy() for k in _BUFFER}, buffer_pos=buffer.pos,
                 python_random=random.getstate(), numpy_random=np.random.get_state(), torch_random=torch.get_rng_state())
    data = io.BytesIO()
    torch.save(state, data)
    atomic_write_bytes(path, data.getvalue())


def _restore_learner(learner, buffer, saved: dict) -> None:
    import random

    import torch

    for k in _NETWORKS:
        getattr(learner, k).load_state_dict(saved[k])
    learner.generator.set_state(saved["generator"])
    learner.rng.bit_generator.state = saved["rng"]
    for k in _BUFFER:
        getattr(buffer, k)[: len(saved["buffer"][k])] = saved["buffer"][k]
    buffer.size, buffer.pos = len(saved["buffer"]["obs"]), saved["buffer_pos"]
    random.setstate(saved["python_random"])
    np.random.set_state(saved["numpy_random"])
    torch.set_rng_state(saved["torch_random"])


def baseline_episodes(env, seed: int, options: dict) -> dict[str, float]:
    """Fixed-time and max-pressure on one episode's traffic and seed: returns and primary metrics."""
    from marlinkit.envs.traffic.controllers import controller_episode

    out = {}
    for name in ("fixed-time", "max-pressure"):
        total, metrics = controller_episode(env, name, seed, options)
        key = name.replace("-", "_")
        out.update({f"{key}_return": total, **{f"{key}_{k}": metrics[k] for k in BASELINE_METRICS}})
    return out


def _evaluate(env: CurriculumEnv, learner, cfg: MaestroConfig, episode: int, evaluate,
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

@dataclass
class AblationResults:
    """Everything the notebooks read: per-episode rows, generation log, sidecars, calibration."""

    config: MaestroConfig
    preset: str
    episodes: pd.DataFrame
    generations: pd.DataFrame
    sidecars: dict[str, dict]
    calibration: Calibration
    calibration_info: dict
    root: Path
    baselines: pd.DataFrame  # fixed-time and max-pressure on the evaluation episode: return and traffic metrics

    @property
    def scale_note(self) -> str:
        """What the scores mean and which policy is evaluated (stated on every table and figure)."""
        return (f"score: 0 = fixed-time (30 s), {self.config.target_paper:g} = max-pressure, each on the traffic "
                f"it was measured on (training: that episode's context and SUMO seed; evaluation: real flow, "
                f"seed {self.config.eval_seed}); evaluated policy: {self.config.eval_policy}"
                + (" (Gumbel-softmax samples; greedy argmax stored beside it)" if self.config.eval_policy == "stochastic"
                   else " (argmax; stochastic Gumbel-softmax samples stored beside it)"))

    @property
    def engine(self) -> str:
        versions = sorted({s["engine_version"] for s in self.sidecars.values()})
        return f"{self.config.engine} ({', '.join(versions)})"

    @property
    def llm(self) -> str:
        return ", ".join(sorted({s["llm"] for s in self.sidecars.values()}))

    def provenance(self, note: str | None = None) -> str:
        """Preset, engine, LLM, the score's scale and the evaluated policy, then ``note``."""
        from marlinkit.plots import provenance_text

        return provenance_text(self.preset, self.engine, self.llm, "; ".join(filter(None, [self.scale_note, note])))


def load_config(preset: str, record: bool | None = None, **overrides: Any) -> MaestroConfig:
    """A preset's ``maestro`` section with ``overrides``; ``record`` None follows ``$MARLINKIT_RECORD`` (strict replay)."""
    from marlinkit.llm import config as llm_config

    return MaestroConfig(**presets.get(preset, "maestro", **overrides), record=llm_config.recording(record))


def run_ablation(preset: str = presets.DEFAULT_PRESET, root: Path | None = None, progress: bool = True,
                 **overrides: Any) -> AblationResults:
    """Run (or load) every (ablation, seed) of a preset; missing runs go to ``executor``, ``workers`` at a time,
    and each run's files are written here as soon as it finishes."""
    from marlinkit.llm.cache import transcript_context

    cfg = load_config(preset, **overrides)
    store = ResultStore(Path(root) if root else paths.results_dir(PAPER, preset))
    runs = [(a, s) for a in cfg.ablations for s in cfg.seeds]
    calibrated = store.is_complete("ablation_calibration", _calibration_config(cfg))
    # an uncalibrated ablation has runs to do too: one Ray start for both (none when all is cached)
    with contextlib.nullcontext() if calibrated else executors.session(cfg.executor, cfg.workers, cfg.ray_address):
        calibration, calibration_info = calibrate(cfg, store)
        todo = [(cfg, a, s, calibration, str(store.root)) for a, s in runs
                if not store.is_complete(run_name(a, f"seed{s}"), run_config(cfg, a, s, calibration))]
        with transcript_context(preset=preset):
            executors.run_jobs(_run_job, todo, cfg.executor, min(cfg.workers, max(len(todo), 1)), cfg.ray_address,
                               progress, "MAESTRO runs", fresh_process=True, on_result=lambda _, run: _save_run(store, run))
    names = [run_name(a, f"seed{s}") for a, s in runs]
    episodes = pd.concat([store.load(n) for n in names], ignore_index=True)
    generations = pd.concat([_load_generations(store.root / f"{n}.generations.jsonl", n) for n in names], ignore_index=True)
    return AblationResults(cfg, preset, episodes, generations, {n: store.load_sidecar(n) for n in names},
                           calibration, calibration_info, store.root, store.load("ablation_calibration"))


def _load_generations(path: Path, name: str) -> pd.DataFrame:
    ablation, seed = name.split("__")
    frame = pd.DataFrame(read_jsonl(path))
    return frame.assign(ablation=ablation, seed=int(seed.removeprefix("seed")))

