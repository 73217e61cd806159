"""What one run of the dual loop is made of (:class:`RunParts`): its settings, environment and architect, and the
outer loop's two acts on them (a new context, a reward event)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from marlinkit.maestro import curriculum
from marlinkit.maestro.ablation.config import (ABLATIONS, Ablation, Config, architect_backend, architect_config,
                                               maddpg_config, rule_config, run_config, shared_transcripts,
                                               transcript_name)
from marlinkit.maestro.ablation.records import LoopState
from marlinkit.maestro.curriculum_env import Calibration, CurriculumEnv, env_config
from marlinkit.repro.keys import config_hash
from marlinkit.runs import run_name

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
    name: str
    checkpoint_path: Path
    hashed: str  # the run's configuration hash (its checkpoints carry it)

    @classmethod
    def open(cls, cfg: Config, ablation: str, seed: int, calibration: Calibration, root: str) -> RunParts:
        """Seed the run, then build its LLM backend, environment and architect (in the order the seeds expect)."""
        from marlinkit.algos.maddpg import seed_everything
        from marlinkit.envs.traffic.env import TrafficSignalEnv
        from marlinkit.llm import config as llm_config
        from marlinkit.maestro import architect as arch

        ccfg, mcfg = rule_config(cfg), maddpg_config(cfg, seed)
        seed_everything(seed)
        backend = llm_config.cached_backend(cfg.llm, transcript_name(cfg, ablation, seed), cfg.record,
                                            script=arch.scripted_architect_replies(), model="maestro-architect",
                                            shared=shared_transcripts(cfg, ablation, seed),
                                            backend=architect_backend(cfg))
        log, acfg = arch.GenerationLog(), architect_config(cfg, ablation)
        base = TrafficSignalEnv(env_config(cfg))
        env = CurriculumEnv(base, ccfg)
        on = acfg is not None  # A0: no curriculum, every episode the real flow
        name = run_name(ablation, f"seed{seed}")
        return cls(cfg, ablation, seed, calibration, ABLATIONS[ablation], ccfg, mcfg, backend, log, base, env,
                   arch.CurriculumArchitect(backend, base.network, acfg, log) if on else None,
                   arch.RewardSynthesizer(backend, acfg, log) if on else None,
                   name, Path(root) / f"{name}.checkpoint.pt",
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
        self.env.set_reward(state.reward_source)

    def regenerates(self, episode: int) -> bool:
        """A8 ("llm" mode) also asks for a new context every ``regen_interval`` episodes."""
        return self.spec.curriculum_mode == "llm" and (episode + 1) % self.cfg.regen_interval == 0
