"""The ablation's settings (the ``ablation`` section of a preset, which :func:`marlinkit.presets.ablation_config`
resolves) and what one run's settings derive from them: its MADDPG and architect settings, its key, names and folder."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from marlinkit import executors, paths
from marlinkit.algos.maddpg_overrides import MADDPGOverrides
from marlinkit.config_fields import check_choices, label
from marlinkit.envs.traffic.engines import EngineName
from marlinkit.llm import config as llm_config
from marlinkit.maestro import curriculum
from marlinkit.maestro.curriculum_env import Calibration
from marlinkit.repro import keys
from marlinkit.settings import maddpg_settings

PAPER = "maestro"
#: The LLM setting of the reference architect (a surrogate, not an LLM: :mod:`marlinkit.maestro.reference_architect`).
REFERENCE_LLM = "reference"
#: Evaluated policies (as marlinkit.algos.maddpg.EVAL_POLICIES, kept here so importing this module needs no torch).
EvalPolicy = Literal["stochastic", "greedy"]
EVAL_POLICIES = get_args(EvalPolicy)


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
    """The ``ablation`` section: the A2/A7/A8 ablation's settings; hashed into every run's sidecar."""

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
    executor: executors.Executor = "local"
    """"local" processes or "ray" (marlinkit.executors)."""
    ray_address: str | None = None
    """Ray cluster to join (e.g. "auto"); None starts a local instance of ``workers`` CPUs."""
    llm: str = "smollm2"
    """LLM setting (marlinkit.llm.config, checked when the Config is built); "scripted" plays the protocol without a
    model; "reference" is the reference architect, a surrogate that is not an LLM."""
    record: bool = False
    """Call the model on a transcript miss and record it (False: strict replay, a miss is an error)."""
    engine: EngineName = "sumo"
    """Traffic engine."""
    target_paper: float = 165.0
    """The paper's curriculum target, on its reward scale (Section 4.2): the score's max-pressure level."""
    curriculum: str = "paper"
    """The difficulty rule's target and start (a setting of marlinkit/settings/curricula.toml): "paper" (target =
    max-pressure level, start at the easiest d) or "measured" (target where a measured learner ends, start at
    the real flow's load)."""
    eval_seed: int = 1_000_000
    """SUMO seed of every evaluation episode (and of its stochastic policy's noise)."""
    eval_policy: EvalPolicy = "stochastic"
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
    """A named MADDPG setting of the measured sweep (``marlinkit/settings/maddpg_settings.toml``, e.g. "ue25",
    MADDPGConfig's default) in place of ``maddpg``; its runs, transcripts and outputs are named apart
    (``<name>_maddpg``). None: ``maddpg`` as the preset gives it (the paper preset: Lowe et al.'s defaults)."""
    preset: str | None = label()
    """The preset whose MAESTRO results folder holds the runs and whose name the outputs carry (a label: not part of
    any run's key)."""
    root: Path | str | None = label()
    """A folder for the runs instead of the preset's (a label; None: :func:`results_root`)."""
    progress: bool = label(True)
    """Show the runs' progress (a label)."""

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
        check_choices(self)
        executors.check_executor(self.executor, self.workers)
        curriculum.rule_config(self.curriculum, self.target_paper)  # an unknown setting fails here, by name
        if self.llm != REFERENCE_LLM:
            llm_config.check(self.llm)
        object.__setattr__(self, "maddpg", MADDPGOverrides.of(self.maddpg))
        if self.maddpg_setting is not None:
            named = maddpg_settings()
            setting = named.get(self.maddpg_setting)
            if setting is None or setting.train_difficulty is not None:
                known = [name for name, s in named.items() if s.train_difficulty is None]
                raise ValueError(f"unknown MADDPG setting {self.maddpg_setting!r}; known: {', '.join(known)} "
                                 "(marlinkit/settings/maddpg_settings.toml; those that train on a fixed context are "
                                 "the sweep's own)")
            object.__setattr__(self, "maddpg", setting.maddpg)


# ----- settings of one run ---------------------------------------------------------------------

def maddpg_config(cfg: Config, seed: int):
    """The :class:`~marlinkit.algos.maddpg.MADDPGConfig` of ``seed``'s run: ``cfg.maddpg`` over the defaults, the
    replay buffer cut to the run's steps unless ``cfg.maddpg`` sets it."""
    from marlinkit.algos.maddpg import MADDPGConfig

    total = cfg.episodes * cfg.episode_seconds
    defaults = MADDPGConfig()
    overrides = {"buffer_size": min(defaults.buffer_size, total), **cfg.maddpg.given()}
    return MADDPGConfig(seed=seed, eval_every=cfg.eval_every, **overrides)


def architect_config(cfg: Config, ablation: str):
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
            "maddpg": keys.maddpg_key(maddpg_config(cfg, seed)), "calibration": asdict(calibration),
            "architect": _optional_asdict(architect_config(cfg, ablation)),
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
    """The run's LLM transcript: one per (configuration, seed, curriculum setting), since the prompts carry the rule's
    target."""
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
    """Where a preset's runs live: the paper setting's in ``data/results/maestro/<preset>/``, another's in a
    subfolder."""
    return paths.results_dir(PAPER, preset) / setting_suffix(cfg)


def rule_config(cfg: Config) -> curriculum.CurriculumConfig:
    """The difficulty rule a run follows (its ``curriculum`` setting, on the ``target_paper`` score scale)."""
    return curriculum.rule_config(cfg.curriculum, cfg.target_paper)


def leader_of(ablation: str) -> str | None:
    """The configuration ``ablation`` trains as while no generated reward is active (A7: A2, the same curriculum
    mode on the environment reward); None for a configuration without an LLM reward."""
    spec = ABLATIONS[ablation]
    if not spec.llm_reward:
        return None
    return next(other.name for other in ABLATIONS.values()
                if other.curriculum_mode == spec.curriculum_mode and not other.llm_reward)

