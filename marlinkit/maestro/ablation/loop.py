"""One run of MAESTRO: :func:`dual_loop`, the LLM architect's outer loop around the learners' inner one."""

from __future__ import annotations

import json
import time
from typing import Any

import pandas as pd

from marlinkit.maestro import curriculum
from marlinkit.maestro.ablation.config import Config, run_config
from marlinkit.maestro.ablation.inner import FollowLeader, Leader, TrainMADDPG
from marlinkit.maestro.ablation.parts import RunParts
from marlinkit.maestro.ablation.records import LoopState, Timer, prompt_stats
from marlinkit.maestro.curriculum_env import Calibration
from marlinkit.progress import Progress


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
    """A finished run's table, configuration, generation log (JSON lines), sidecar provenance and trained actor
    (the bytes of ``<run>.actor.pt``, :func:`marlinkit.maestro.heldout.actor_bytes`)."""
    from marlinkit.llm import config as llm_config

    counts = {f"{kind}_{what}": n for kind in ("context", "reward")
              for what, n in zip(("calls", "accepted"), run.log.counts(kind))}
    cfg = run.cfg
    return {"name": run.name, "table": pd.DataFrame(state.rows),
            "config": run_config(cfg, run.ablation, run.seed, run.calibration),
            "generations": "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in run.log.records),
            "provenance": {"engine": cfg.engine, "engine_version": inner.engine_version,
                           "llm": llm_config.label(run.backend), "llm_setting": cfg.llm, "wall_s": wall_s, **counts,
                           "followed": inner.followed},
            "actor": inner.actor_bytes()}
