"""What a MAESTRO ablation hands the notebooks (``ablation.run``): rows, generation log, sidecars, calibration."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from marlinkit.algos.maddpg_overrides import PAPER_MADDPG
from marlinkit.maestro.curriculum_env import Calibration

if TYPE_CHECKING:
    from marlinkit.maestro.ablation.config import Config
    from marlinkit.plots import Provenance


@dataclass
class AblationResults:
    """Everything the notebooks read: per-episode rows, generation log, sidecars, calibration."""

    config: Config
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
        seed = "SUMO seed" if self.config.engine == "sumo" else f"{self.config.engine} run (seeds change nothing on it)"
        return (f"score: 0 = fixed-time (30 s), {self.config.target_paper:g} = max-pressure, each on the traffic "
                f"it was measured on (training: that episode's context and {seed}; evaluation: real flow, "
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

    def for_seeds(self, seeds) -> "AblationResults":
        """The same results restricted to ``seeds`` (e.g. the paper's four, beside all twelve): every table and
        figure function reads a subset as it reads the whole."""
        seeds = tuple(int(s) for s in seeds)
        missing = sorted(set(seeds) - set(self.config.seeds))
        if missing:
            raise ValueError(f"seeds {missing} are not in these results (seeds {list(self.config.seeds)})")
        kept = {name: sidecar for name, sidecar in self.sidecars.items() if int(name.rsplit("seed", 1)[1]) in seeds}
        return dataclasses.replace(self, config=dataclasses.replace(self.config, seeds=seeds), sidecars=kept,
                                   episodes=self.episodes[self.episodes.seed.isin(seeds)].reset_index(drop=True),
                                   generations=self.generations[self.generations.seed.isin(seeds)].reset_index(drop=True))

    @property
    def runs_note(self) -> str:
        """Which seeds, curriculum rule and MADDPG settings the rows come from."""
        rule = "" if self.config.curriculum == "paper" else f"; curriculum rule: {self.config.curriculum}"
        if self.config.maddpg_setting is not None:
            maddpg = f"; MADDPG: the sweep's {self.config.maddpg_setting!r} setting {self.config.maddpg.given()}"
        elif self.config.maddpg == PAPER_MADDPG:
            maddpg = "; MADDPG: the paper's defaults"
        elif self.config.maddpg.given():
            maddpg = f"; MADDPG overrides {self.config.maddpg.given()}"
        else:
            maddpg = "; MADDPG: marlinkit's defaults"
        return (f"seeds {list(self.config.seeds)} x {self.config.episodes} episodes of {self.config.episode_seconds} s"
                + rule + maddpg)

    def provenance(self, note: str | None = None) -> "Provenance":
        """Preset, engine, LLM and seeds (the footer line); the runs' settings, the score's scale and the evaluated
        policy, and ``note``, in its details."""
        from marlinkit.plots import Provenance

        details = {"runs": self.runs_note, "score": self.scale_note, **({"note": note} if note else {})}
        return Provenance(self.preset, self.engine, f"LLM {self.llm}", self.config.seeds, details)


