"""One run of MAESTRO: :func:`dual_loop`, the LLM architect's outer loop around the learners' inner one."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from marlinkit.maestro import curriculum
from marlinkit.maestro.ablation.config import (ABLATIONS, Ablation, Config, architect_backend, architect_config,
                                               maddpg_config, rule_config, run_config, shared_transcripts,
                                               transcript_name)
from marlinkit.maestro.ablation.inner import FollowLeader, Leader, TrainMADDPG
from marlinkit.maestro.ablation.records import LoopState, Timer, prompt_stats
from marlinkit.maestro.curriculum_env import Calibration, CurriculumEnv, env_config
from marlinkit.progress import Progress
from marlinkit.runs import config_hash, run_name

if TYPE_CHECKING:
    from marlinkit.algos.maddpg import MADDPGConfig
    from marlinkit.envs.traffic.env import TrafficSignalEnv
    from marlinkit.llm.base import ChatBackend
    from marlinkit.maestro.architect import CurriculumArchitect, GenerationLog, RewardSynthesizer


@dataclass
class RunParts:
    """What one (configuration, seed) run is made of: its settings, its environment and its architect."""

    cfg: Config
    ablation: str
    seed: int
    calibration: Calibration
    spec: Ablation
    ccfg: curriculum.CurriculumConfig  # the difficulty rule
    maddpg: MADDPGConfig
    backend: ChatBackend  # the LLM (or the reference architect) the architect asks
    log: GenerationLog  # every context and reward the architect was asked for
    base: TrafficSignalEnv  # the traffic simulation
    env: CurriculumEnv  # the environment the learners train in (context, shaped reward)
    architect: CurriculumArchitect | None  # None: A0, no curriculum
    synth: RewardSynthesizer | None  # None: A0
    episode_rows: int  # reward calls per training episode
    name: str
    checkpoint_path: Path
    hashed: str  # the run's configuration hash (its checkpoints carry it)

    @classmethod
    def open(cls, cfg: Config, ablation: str, seed: int, calibration: Calibration, root: str) -> RunParts:
        """Seed the run, then build its LLM backend, environment and architect (in the order the seeds expect)."""
        from marlinkit.algos.maddpg import env_dims, seed_everything
        from marlinkit.envs.traffic.env import TrafficSignalEnv
        from marlinkit.llm import config as llm_config
        from marlinkit.maestro import architect as arch

        ccfg, mcfg = rule_config(cfg), maddpg_config(cfg, seed)
        seed_everything(seed)
        backend = llm_config.cached_backend(cfg.llm, transcript_name(cfg, ablation, seed), cfg.record,
                                            script=arch.scripted_architect_replies(), model="maestro-architect",
                                            shared=shared_transcripts(cfg, ablation, seed), backend=architect_backend(cfg))
        log, acfg = arch.GenerationLog(), architect_config(cfg, ablation)
        base = TrafficSignalEnv(env_config(cfg))
        env = CurriculumEnv(base, ccfg)
        on = acfg is not None  # A0: no curriculum, every episode the real flow
        name = run_name(ablation, f"seed{seed}")
        return cls(cfg, ablation, seed, calibration, ABLATIONS[ablation], ccfg, mcfg, backend, log, base, env,
                   arch.CurriculumArchitect(backend, base.network, acfg, log) if on else None,
                   arch.RewardSynthesizer(backend, acfg, log) if on else None,
                   cfg.episode_seconds * len(env_dims(base)[0]), name, Path(root) / f"{name}.checkpoint.pt",
                   config_hash(run_config(cfg, ablation, seed, calibration)))

    @property
    def curriculum_on(self) -> bool:
        return self.architect is not None

    def first_state(self) -> LoopState:
        difficulty = curriculum.initial_difficulty(self.ccfg)
        return LoopState(difficulty, curriculum.initial_reward_state(difficulty) if self.spec.llm_reward
                         else curriculum.RewardState())

    def write_context(self, state: LoopState, d: float, stats: dict, episode: int) -> None:
        """The architect writes the next training traffic for difficulty d (Section 4.2)."""
        state.context, state.context_from_llm = self.architect.propose(
            d, stats, episode, self.seed * 1000 + state.generations, self.cfg.episode_seconds)
        self.env.context = state.context
        state.generations += 1

    def reward_event(self, state: LoopState, d: float, stats: dict, episode: int) -> None:
        """A7's pending reward event: the synthesiser writes reward code, checked in the sandbox (Section 4.3)."""
        from marlinkit.maestro import architect as arch

        state.reward_trigger = state.reward.trigger
        state.reward, state.reward_source = arch.run_reward_event(self.synth, state.reward, d, stats, episode,
                                                                  self.seed * 1000 + episode, self.ccfg)
        ticks = self.synth.episode_ticks(state.reward_source, self.episode_rows) if state.reward_source else 0
        self.env.set_reward(state.reward_source, ticks)

    def regenerates(self, episode: int) -> bool:
        """A8 ("llm" mode) also asks for a new context every ``regen_interval`` episodes."""
        return self.spec.curriculum_mode == "llm" and (episode + 1) % self.cfg.regen_interval == 0


def dual_loop(cfg: Config, ablation: str, seed: int, calibration: Calibration, root: str,
              leader: Leader | None = None, stop_after: int | None = None) -> dict[str, Any]:
    """MAESTRO for one (configuration, seed): the LLM architect's outer loop around MADDPG's inner one.

    Before each episode the **outer loop** (the architect) acts on the curriculum's events: a new traffic context
    when d changed (A8 also every ``regen_interval`` episodes), and A7's pending reward event. The **inner loop**
    (the learners) trains on that context (:class:`TrainMADDPG`), or replays the finished ``leader``'s episode
    (:class:`FollowLeader`). Then the **feedback**: the episode's score moves d, and A7's reward schedule advances.
    ``stop_after``: only the first episodes of the full run (``make verify PRESET=paper``). Runs in a fresh
    process; returns what :func:`~marlinkit.maestro.ablation.runner.save_run` writes (checkpoints under ``root``).
    """
    import torch

    torch.set_num_threads(1)  # one run per core: more threads only contend
    started = time.perf_counter()
    run = RunParts.open(cfg, ablation, seed, calibration, root)
    inner = TrainMADDPG(run) if leader is None else FollowLeader(run, leader)
    state = inner.resume(run.first_state())
    last = cfg.episodes if stop_after is None else min(cfg.episodes, stop_after)
    episodes_done = Progress.episodes(last - state.episode, f"{ablation} seed {seed}")  # > 0 done: resumed
    try:
        for episode in range(state.episode, last):
            d, timer = state.difficulty.difficulty, Timer()
            stats = prompt_stats(state.scores, state.metrics, episode, run.ccfg.target)
            with timer("llm_curriculum_s"):  # outer loop: the architect designs the task ...
                if state.new_context and run.curriculum_on:
                    run.write_context(state, d, stats, episode)
            with timer("llm_reward_s"):  # ... and (A7) the reward that guides the learners through it
                if state.reward.pending:
                    run.reward_event(state, d, stats, episode)
            record = inner.episode(state, episode, d, timer)  # inner loop: the learners train on that task
            state.metrics = record.train_metrics
            state.scores.append(record.score)  # feedback: the curriculum's rules on the episode's score
            state.reward_trigger = None
            if run.curriculum_on:
                state.difficulty = curriculum.update_difficulty(state.difficulty, record.score, run.ccfg)
            inner.record_rule(record, state)
            if run.spec.llm_reward:
                state.reward = curriculum.advance_rewards(state.reward, state.difficulty, run.ccfg)
            state.new_context = run.curriculum_on and (state.difficulty.changed or run.regenerates(episode))
            inner.finish(record)
            state.rows.append(record.row())
            state.episode = episode + 1
            episodes_done.update()
            inner.save(state, state.elapsed_s + time.perf_counter() - started)
    finally:
        episodes_done.close()
        run.env.close()
    return run_output(run, inner, state, state.elapsed_s + time.perf_counter() - started)


def run_output(run: RunParts, inner: TrainMADDPG | FollowLeader, state: LoopState, wall_s: float) -> dict[str, Any]:
    """A finished run's table, configuration, generation log (JSON lines) and sidecar provenance."""
    from marlinkit.llm import config as llm_config

    counts = {f"{kind}_{what}": n for kind in ("context", "reward")
              for what, n in zip(("calls", "accepted"), run.log.counts(kind))}
    cfg = run.cfg
    return {"name": run.name, "table": pd.DataFrame(state.rows),
            "config": run_config(cfg, run.ablation, run.seed, run.calibration),
            "generations": "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in run.log.records),
            "provenance": {"engine": cfg.engine, "engine_version": inner.engine_version,
                           "llm": llm_config.label(run.backend), "llm_setting": cfg.llm, "wall_s": wall_s, **counts,
                           "followed": inner.followed}}
