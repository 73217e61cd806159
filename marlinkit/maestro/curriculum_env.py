"""The traffic environment as MAESTRO's curriculum trains on it, and the score its difficulty rules read.

* :class:`CurriculumEnv` wraps the Hangzhou 4x4 environment: every reset plays the current
  :class:`~marlinkit.envs.traffic.context.TrafficContext` (the architect's), and with A7's shaping on,
  the rewards are ``(1 - w(d)) r_env + w(d) * 170.0 * r_LLM`` with r_LLM from the generated reward
  code, run in the sandbox on the per-intersection fields of :class:`RewardInputs`.
* The *score*. The curriculum's target (the paper's 165.0) lives on the paper's reward scale. Ours
  differs (a different engine and reward weights), and our returns cross zero, so the
  multiplicative 1.05 x / 0.95 x target bars cannot be applied to them directly. Every episode's
  return R is therefore *calibrated on the traffic it was measured on*: max-pressure
  (``target_return``) and fixed-time 30 s (``zero_return``) run on the same traffic with the same
  SUMO seed (:func:`baseline_episodes`), and the score is
  ``165.0 * (R - zero_return) / (target_return - zero_return)``: 165 is max-pressure level, 0 is
  fixed-time level on that traffic (:func:`calibrated_score`; NaN where max-pressure does not beat
  fixed-time there, the scale being undefined). The difficulty rules of Section 4.2 run unchanged
  on that score with target 165.0 (raise above 173.25, lower below 156.75). The evaluation
  episode (real flow, ``eval_seed``) is calibrated once per configuration by :func:`calibrate`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from marlinkit import executors
from marlinkit.maestro import curriculum
from marlinkit.envs.traffic.engines import EngineName
from marlinkit.files import ResultFileError
from marlinkit.maestro.sandbox.limits import RewardInputs
from marlinkit.runs import ResultStore


class EpisodeSettings(Protocol):
    """What the environment's settings and the calibration read of the ablation's settings (the ablation's ``Config``,
    :class:`marlinkit.maestro.ablation.Config`, has these fields and more)."""

    engine: EngineName  # traffic engine ("sumo" or "cityflow")
    episode_seconds: int  # 1-s steps per episode
    eval_seed: int  # the evaluation episode's seed
    target_paper: float  # the score's max-pressure level
    executor: executors.Executor  # where the calibration runs: "local" or "ray"
    ray_address: str | None  # the Ray cluster to join, None: a local instance


#: Traffic metrics copied into the result rows (training, evaluation and baseline episodes).
BASELINE_METRICS = ("avg_delay_s", "avg_queue", "throughput")

# ----- reward inputs and the A7 reward wrapper ---------------------------------------------------

class CurriculumEnv:
    """The traffic env as MADDPG sees it: the current context on every reset, and A7's reward.

    ``context`` None means the real Hangzhou flow (evaluation). With ``shaping`` on and an active
    generated reward, rewards are :func:`marlinkit.maestro.curriculum.training_reward`; the environment's
    own return is kept in ``env_return``. Each episode gets a fresh sandbox process whose CPU limit is the
    episode's budget (``SandboxLimits.episode_cpu_seconds``), started at its first shaped step. A sandbox failure
    during training (budget, evaluation error, crash, bad value) reverts to the environment reward
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
        self.reward_refusal: str | None = None  # why the checker now refuses the reward source (a resumed run)
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
        from marlinkit.maestro.sandbox import RewardWorker, SandboxError, SandboxLimits

        started = time.perf_counter()
        metrics = self.inputs.update(np.stack([obs[a] for a in agents]), infos, agents, self.env.current_phases)
        try:
            if self.reward_refusal is not None:
                raise SandboxError("syntax", f"the checker refuses this reward now: {self.reward_refusal}")
            if self.worker is None:
                self.worker = RewardWorker(self.reward_source, cpu_seconds=SandboxLimits().episode_cpu_seconds)
            r_llm = self.worker.evaluate(metrics, self.difficulty)
        except SandboxError as error:
            self.runtime_failure = str(error)
            self.reward_state = curriculum.record_runtime_failure(self.reward_state)
            self.set_reward(None)
            r_llm = None
        shaped = curriculum.training_reward(r_env, r_llm, self.difficulty, self.reward_state, self.config)
        self.reward_eval_s += time.perf_counter() - started
        return obs, dict(zip(agents, shaped.tolist())), terminations, truncations, infos

    def set_reward(self, source: str | None, refusal: str | None = None) -> None:
        """The accepted reward code (None: none); ``refusal``: why the checker refuses it now (its first shaped
        step then fails, and the run falls back to the environment reward and logs the retirement)."""
        self._close_worker()
        self.reward_source, self.reward_refusal = source, refusal

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
            raise ValueError(f"calibration needs target_return > zero_return, got {self.target_return} <= "
                             f"{self.zero_return}")

    def score(self, episode_return):
        return calibrated_score(episode_return, self.zero_return, self.target_return, self.target_paper)


def env_config(cfg: EpisodeSettings, context=None):
    """The traffic environment's settings for ``cfg`` (``context`` None: the real Hangzhou flow)."""
    from marlinkit.envs.traffic.env import TrafficEnvConfig

    return TrafficEnvConfig(engine=cfg.engine, context=context, episode_seconds=cfg.episode_seconds)


def _calibration_job(cfg: EpisodeSettings) -> dict[str, Any]:
    """Returns and metrics of max-pressure and fixed-time on the evaluation episode (own process)."""
    from marlinkit.envs.traffic.controllers import controller_episode
    from marlinkit.envs.traffic.env import TrafficSignalEnv

    env = TrafficSignalEnv(env_config(cfg))
    out: dict[str, Any] = {"context": "real Hangzhou flow", "seed": cfg.eval_seed}
    try:
        for name in ("max-pressure", "fixed-time"):
            total, metrics = controller_episode(env, name, cfg.eval_seed)
            out[name] = {"return": total, **metrics}
        out["engine_version"] = env.engine.version  # complete once a simulation ran (before it: the engine's name)
    finally:
        env.close()
    return out


def calibration_config(cfg: EpisodeSettings) -> dict[str, Any]:
    """What the evaluation episode's calibration depends on (hashed into its sidecar)."""
    keys = ("engine", "episode_seconds", "eval_seed", "target_paper")
    return {"traffic": "real flow", **{k: getattr(cfg, k) for k in keys}}


def calibrate(cfg: EpisodeSettings, store: ResultStore) -> tuple[Calibration, dict[str, Any]]:
    """The evaluation episode's calibration, measured once per configuration (cached next to the runs)."""
    config = calibration_config(cfg)
    if not store.is_complete("ablation_calibration", config):
        result = executors.run_jobs(_calibration_job, [(cfg,)], cfg.executor, 1, cfg.ray_address, progress=False,
                                    fresh_process=True)[0]
        table = pd.DataFrame([{"controller": k, **v} for k, v in result.items() if isinstance(v, dict)])
        store.save("ablation_calibration", table, config, engine_version=result["engine_version"],
                   context=result["context"],
                   seed=result["seed"])
    table = store.load("ablation_calibration").set_index("controller")
    try:
        target, zero = float(table.loc["max-pressure", "return"]), float(table.loc["fixed-time", "return"])
    except (KeyError, TypeError, ValueError) as error:
        raise ResultFileError(f"calibration table {store.table_path('ablation_calibration')} does not hold the "
                              f"max-pressure and fixed-time returns ({type(error).__name__}: {error}); delete it and "
                              "its .json to recompute") from error
    return Calibration(target, zero, cfg.target_paper), store.load_sidecar("ablation_calibration")


def baseline_episodes(env, seed: int, options: dict) -> dict[str, float]:
    """Fixed-time and max-pressure on one episode's traffic and seed: returns and primary metrics."""
    from marlinkit.envs.traffic.controllers import controller_episode

    out = {}
    for name in ("fixed-time", "max-pressure"):
        total, metrics = controller_episode(env, name, seed, options)
        key = name.replace("-", "_")
        out.update({f"{key}_return": total, **{f"{key}_{k}": metrics[k] for k in BASELINE_METRICS}})
    return out

