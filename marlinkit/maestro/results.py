"""What a MAESTRO ablation hands the notebooks (``ablation.run``): rows, generation log, sidecars, calibration."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from marlinkit.maestro.curriculum_env import Calibration
from marlinkit.plots import Provenance
from marlinkit.result import Result
from marlinkit.settings import maddpg_settings, paper_maddpg

if TYPE_CHECKING:
    from marlinkit.maestro.ablation.config import Config

#: The experiment's section name.
EXPERIMENT = "ablation"
#: The MADDPG settings whose learners were trained to beat the random phase switcher on held-out traffic
#: (:mod:`marlinkit.maestro.heldout`; ``beats_random`` in ``marlinkit/settings/maddpg_settings.toml``); the paper
#: preset's other rows carry :data:`BARELY_ABOVE_RANDOM`.
LEARNING_SETTINGS = tuple(name for name, setting in maddpg_settings().items() if setting.beats_random)
#: The label of the paper preset's rows whose learners end barely above a uniform random phase request each second
#: (greedy policies below fixed-time on the real flow): their comparisons between configurations are not evidence.
BARELY_ABOVE_RANDOM = "learners barely above random"


@dataclass(frozen=True)
class AblationResults(Result):
    """An ablation's :class:`~marlinkit.result.Result`: tables ``episodes`` (one row per run and episode),
    ``generations`` (the architect's generation log) and ``baselines`` (fixed-time and max-pressure on the
    evaluation episode: return and traffic metrics); beside them the runs' sidecars and the score's calibration."""

    sidecars: dict[str, dict]
    """Each run's JSON sidecar, by run name (``A2__seed200``)."""
    calibration: Calibration
    """The affine map from the environment's return to the calibrated score (0 = fixed-time, target = max-pressure)."""
    calibration_info: dict
    """The calibration's measurements, as its sidecar records them."""
    root: Path
    """The folder the runs sit in (``data/results/maestro/<preset>/...``)."""

    @classmethod
    def of(cls, config: Config, preset: str, episodes: pd.DataFrame, generations: pd.DataFrame,
           sidecars: dict[str, dict],
           calibration: Calibration, calibration_info: dict, root: Path, baselines: pd.DataFrame) -> "AblationResults":
        """The results of ``config``'s runs under ``root``; their files and provenance are read from the sidecars."""
        root = Path(root)
        found = [root / f"{name}{suffix}" for name in sidecars for suffix in (".csv", ".json", ".generations.jsonl")]
        found += [root / "ablation_calibration.csv", root / "ablation_calibration.json"]
        engine = (f"{config.engine} "
                  f"({', '.join(sorted({s['engine_version'] for s in sidecars.values() if 'engine_version' in s}))})")
        label = learners_label(config, preset)
        provenance = Provenance(preset, engine, "; ".join(filter(None, (f"LLM {sidecar_llms(sidecars)}", label))),
                                config.seeds, {"runs": runs_note(config), "score": scale_note(config),
                                               **({"learners": label} if label else {})})
        return cls(EXPERIMENT, preset, config,
                   {"episodes": episodes, "generations": generations, "baselines": baselines},
                   tuple(path for path in found if path.exists()), provenance, sidecars, calibration, calibration_info,
                   root)

    @property
    def episodes(self) -> pd.DataFrame:
        return self.tables["episodes"]

    @property
    def generations(self) -> pd.DataFrame:
        return self.tables["generations"]

    @property
    def baselines(self) -> pd.DataFrame:
        return self.tables["baselines"]

    @property
    def engine(self) -> str:
        return self.provenance.engine

    @property
    def llm(self) -> str:
        return sidecar_llms(self.sidecars)

    @property
    def scale_note(self) -> str:
        """What the scores mean and which policy is evaluated (stated on every table and figure)."""
        return scale_note(self.config)

    @property
    def runs_note(self) -> str:
        """Which seeds, curriculum rule and MADDPG settings the rows come from."""
        return runs_note(self.config)

    def replace(self, **changes: Any) -> "AblationResults":
        """The same results with some of ``config``, ``sidecars`` and the tables (``episodes``, ``generations``,
        ``baselines``) replaced; files and provenance follow."""
        known = {"config", "sidecars", *self.tables}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise KeyError(f"cannot replace {unknown}; replaceable: {', '.join(sorted(known))}")
        now = {"config": self.config, "sidecars": self.sidecars, **self.tables, **changes}
        return AblationResults.of(now["config"], self.preset, now["episodes"], now["generations"], now["sidecars"],
                                  self.calibration, self.calibration_info, self.root, now["baselines"])

    def for_seeds(self, seeds) -> "AblationResults":
        """The same results restricted to ``seeds`` (e.g. the paper's four, beside all twelve): every table and
        figure function reads a subset as it reads the whole."""
        seeds = tuple(int(s) for s in seeds)
        missing = sorted(set(seeds) - set(self.config.seeds))
        if missing:
            raise ValueError(f"seeds {missing} are not in these results (seeds {list(self.config.seeds)})")
        kept = {name: sidecar for name, sidecar in self.sidecars.items() if int(name.rsplit("seed", 1)[1]) in seeds}
        return self.replace(config=dataclasses.replace(self.config, seeds=seeds), sidecars=kept,
                            episodes=self.episodes[self.episodes.seed.isin(seeds)].reset_index(drop=True),
                            generations=self.generations[self.generations.seed.isin(seeds)].reset_index(drop=True))


def sidecar_llms(sidecars: dict[str, dict]) -> str:
    """The LLMs (or the reference architect) the runs' sidecars name, sorted and joined."""
    return ", ".join(sorted({s["llm"] for s in sidecars.values() if "llm" in s}))


def scale_note(config: Config) -> str:
    """What an ablation's scores mean and which policy is evaluated (stated on every table and figure)."""
    seed = "SUMO seed" if config.engine == "sumo" else f"{config.engine} run (seeds change nothing on it)"
    return (f"score: 0 = fixed-time (30 s), {config.target_paper:g} = max-pressure, each on the traffic "
            f"it was measured on (training: that episode's context and {seed}; evaluation: real flow, "
            f"seed {config.eval_seed}); evaluated policy: {config.eval_policy}"
            + (" (Gumbel-softmax samples; greedy argmax stored beside it)" if config.eval_policy == "stochastic"
               else " (argmax; stochastic Gumbel-softmax samples stored beside it)"))


def learners_label(config: Config, preset: str) -> str:
    """:data:`BARELY_ABOVE_RANDOM` for a paper-preset row whose MADDPG setting is not in :data:`LEARNING_SETTINGS`
    (drawn in every figure's footer and table's provenance), else ""."""
    return BARELY_ABOVE_RANDOM if preset == "paper" and config.maddpg_setting not in LEARNING_SETTINGS else ""


def runs_note(config: Config) -> str:
    """Which seeds, curriculum rule and MADDPG settings an ablation's rows come from."""
    rule = "" if config.curriculum == "paper" else f"; curriculum rule: {config.curriculum}"
    if config.maddpg_setting is not None:
        maddpg = f"; MADDPG: the sweep's {config.maddpg_setting!r} setting {config.maddpg.given()}"
    elif config.maddpg == paper_maddpg():
        maddpg = "; MADDPG: the paper's defaults"
    elif config.maddpg.given():
        maddpg = f"; MADDPG overrides {config.maddpg.given()}"
    else:
        maddpg = "; MADDPG: marlinkit's defaults"
    return f"seeds {list(config.seeds)} x {config.episodes} episodes of {config.episode_seconds} s" + rule + maddpg
