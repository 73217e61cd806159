"""The dual loop's inner loop, two ways: :class:`TrainMADDPG` trains MADDPG on the outer loop's context (the paper's),
:class:`FollowLeader` replays a finished run's episodes while the two would train alike (A7 following A2)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from marlinkit.maestro import checkpoint, curriculum
from marlinkit.maestro.ablation.config import EVAL_POLICIES
from marlinkit.maestro.ablation.parts import RunParts
from marlinkit.maestro.ablation.records import REAL_FLOW, EpisodeRecord, LoopState, Timer
from marlinkit.maestro.curriculum_env import baseline_episodes, calibrated_score


class TrainMADDPG:
    """The paper's inner loop: one MADDPG training episode on the outer loop's context (A7: on the shaped reward),
    scored on its own traffic by fixed-time and max-pressure; after every ``eval_every``-th episode both policies
    are evaluated on the real flow. With ``checkpoint_every``, the run resumes from its last checkpoint."""

    def __init__(self, parts: RunParts):
        from marlinkit.algos.maddpg import env_dims, make_learner
        from marlinkit.algos.replay_buffer import ReplayBuffer

        mcfg = parts.maddpg
        agents, obs_dim, n_actions = env_dims(parts.base)
        self.parts = parts
        self.learner = make_learner(len(agents), obs_dim, n_actions, mcfg)
        self.buffer = ReplayBuffer(mcfg.buffer_size, len(agents), obs_dim)
        self.checkpoints = bool(parts.cfg.checkpoint_every)
        self.followed = None  # the run this one follows (None: trained in full)

    @property
    def engine_version(self) -> str:
        return self.parts.base.engine.version  # complete once a simulation ran

    def resume(self, state: LoopState) -> LoopState:
        """The state of an interrupted run of this configuration, learner and buffer restored; else ``state``."""
        p = self.parts
        saved = checkpoint.resume(p.checkpoint_path, self.learner, self.buffer, p.hashed) if self.checkpoints else None
        if saved is None:
            return state
        state, p.env.context, p.log.records[:] = saved["loop"], saved["loop"].context, saved["log"]
        if state.reward.source == "llm" and state.reward_source is not None:
            p.env.set_reward(state.reward_source, p.synth.refusal(state.reward_source))
        return state

    def episode(self, state: LoopState, episode: int, d: float, timer: Timer) -> EpisodeRecord:
        from marlinkit.algos.maddpg import run_episode

        p, env, spec = self.parts, self.parts.env, self.parts.spec
        env.shaping, env.difficulty, env.reward_state, env.runtime_failure = spec.llm_reward, d, state.reward, None
        env.reward_eval_s = 0.0
        train = run_episode(env, self.learner, p.seed + episode, True, self.buffer, state.steps)
        state.reward = env.reward_state  # a runtime failure may have reverted it to the env reward
        if env.runtime_failure is not None:  # retired: the reason goes to the generation log
            p.synth.retire(state.reward_source, env.runtime_failure, episode, d)
        state.steps += train["steps"]
        metrics = p.base.last_metrics
        with timer("baseline_s"):  # the episode's score on its own traffic
            baselines = baseline_episodes(p.base, p.seed + episode, {"context": state.context})
        score = float(calibrated_score(env.env_return, baselines["fixed_time_return"], baselines["max_pressure_return"],
                                       p.cfg.target_paper))
        timer.add("sim_s", train["sim_s"] - env.reward_eval_s)
        timer.add("train_s", train["train_s"])
        timer.add("reward_eval_s", env.reward_eval_s)
        on = p.curriculum_on
        return EpisodeRecord(
            p.ablation, p.seed, episode, d if on else np.nan, bool(state.context_from_llm), state.new_context and on,
            state.context.describe() if on else REAL_FLOW, state.reward.source if spec.llm_reward else "env",
            state.reward_trigger, env.runtime_failure, curriculum.weight(d, p.ccfg) if spec.llm_reward else 0.0,
            train["return"], env.env_return, score, baselines, metrics, train["updates"], timer)

    def record_rule(self, record: EpisodeRecord, state: LoopState) -> None:
        """Record where the difficulty rule moved d (A0: nowhere)."""
        if self.parts.curriculum_on:
            record.difficulty_next, record.difficulty_event = state.difficulty.difficulty, state.difficulty.event

    def finish(self, record: EpisodeRecord) -> None:
        """Both policies evaluated on the real flow after every ``eval_every``-th episode."""
        if (record.episode + 1) % self.parts.cfg.eval_every == 0:
            with record.timer("eval_s"):
                record.evaluation = self.evaluate()

    def evaluate(self) -> dict[str, float]:
        """Both policies on the real flow: ``eval_return_<policy>``, ``eval_score_<policy>`` (on the evaluation
        episode's calibration) and ``eval_<metric>_<policy>`` for every traffic metric."""
        from marlinkit.algos.maddpg import evaluate

        p, env = self.parts, self.parts.env
        training_context, env.context, env.shaping = env.context, None, False
        out: dict[str, float] = {}
        for policy in EVAL_POLICIES:
            value = evaluate(env, self.learner, p.cfg.eval_seed, policy=policy)
            out.update({f"eval_return_{policy}": value, f"eval_score_{policy}": float(p.calibration.score(value)),
                        **{f"eval_{k}_{policy}": v for k, v in env.env.last_metrics.items()}})
        env.context = training_context
        return out

    def actor_bytes(self) -> bytes:
        """The trained actor as ``<run>.actor.pt`` holds it."""
        from marlinkit.maestro.heldout import actor_bytes

        return actor_bytes(self.learner)

    def save(self, state: LoopState, elapsed_s: float) -> None:
        """A checkpoint every ``checkpoint_every`` episodes (none after the last)."""
        p = self.parts
        if self.checkpoints and state.episode % p.cfg.checkpoint_every == 0 and state.episode < p.cfg.episodes:
            checkpoint.save(p.checkpoint_path, self.learner, self.buffer, p.hashed, log=p.log.records,
                            loop=dataclasses.replace(state, elapsed_s=elapsed_s))


@dataclass(frozen=True)
class Leader:
    """A finished run another run follows (:func:`~marlinkit.maestro.ablation.config.leader_of`): its name, table
    and the engine version that made it."""

    name: str
    table: pd.DataFrame
    engine_version: str


class LeaderLeft(Exception):
    """A following run's generated reward was accepted at ``episode``: from there it trains apart from its leader."""

    def __init__(self, episode: int):
        super().__init__(f"a generated reward was accepted before episode {episode}")
        self.episode = episode


class FollowLeader:
    """A7 following A2: while no generated reward is active, A7 trains to the bit as A2 of the same seed does, so
    its inner loop is the leader's finished episode, checked against this run's context and difficulty, until a
    generated reward is accepted (:class:`LeaderLeft`). No checkpoints: a following run replays in minutes."""

    def __init__(self, parts: RunParts, leader: Leader):
        self.parts = parts
        self.rows = leader.table.set_index("episode", drop=False).to_dict("index")
        self.engine_version = leader.engine_version
        self.followed = leader.name

    def resume(self, state: LoopState) -> LoopState:
        return state

    def episode(self, state: LoopState, episode: int, d: float, timer: Timer) -> EpisodeRecord:
        """The leader's episode, with this run's outer loop in the columns it owns."""
        p, spec = self.parts, self.parts.spec
        if state.reward_source is not None:
            raise LeaderLeft(episode)
        row = self.rows[episode]
        if row["difficulty"] != d or row["context"] != state.context.describe():
            raise RuntimeError(f"following {row['ablation']} at episode {row['episode']}: its difficulty "
                               f"{row['difficulty']} and context {row['context']!r} are not this run's {d} and "
                               f"{state.context.describe()!r} (the two should train alike: a bug)")
        metrics = {k: row[f"train_{k}"] for k in ("throughput", "avg_delay_s", "avg_queue")}
        return EpisodeRecord(
            p.ablation, p.seed, episode, d, bool(state.context_from_llm), state.new_context, row["context"],
            state.reward.source if spec.llm_reward else "env", state.reward_trigger, None,
            curriculum.weight(d, p.ccfg) if spec.llm_reward else 0.0, row["train_return"], row["env_return"],
            row["score"], {}, metrics, row["updates"], timer, row["difficulty_next"], row["difficulty_event"],
            leader_row=row)

    def record_rule(self, record: EpisodeRecord, state: LoopState) -> None:
        """The leader's difficulty rule moved d as this run's does on the same score (else the two do not train
        alike)."""
        event = record.difficulty_event
        if record.difficulty_next != state.difficulty.difficulty or (
                event != state.difficulty.event and not (pd.isna(event) and state.difficulty.event is None)):
            raise RuntimeError(f"{self.parts.name} following its leader at episode {record.episode}: the leader's "
                               f"difficulty went to {record.difficulty_next} ({event}), this run's to "
                               f"{state.difficulty.difficulty} ({state.difficulty.event}) on the same score (a bug)")

    def finish(self, record: EpisodeRecord) -> None:
        return None  # the leader's row holds its evaluation

    def actor_bytes(self) -> bytes | None:
        """The leader's actor (this run trained as it did throughout), None where the leader saved none."""
        path = self.parts.checkpoint_path.parent / f"{self.followed}.actor.pt"
        return path.read_bytes() if path.exists() else None

    def save(self, state: LoopState, elapsed_s: float) -> None:
        return None
