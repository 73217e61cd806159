"""The named settings, as data: TOML files in this folder, loaded, checked and typed here.

* ``presets.toml``: the run presets (``smoke``, ``quick``, ``paper``, ``workshop``), one table per experiment;
  :mod:`marlinkit.presets` resolves them.
* ``maddpg_settings.toml``: the named MADDPG settings (:class:`MADDPGSetting`): MAESTRO's measured sweep runs each,
  and an ablation runs one by name.
* ``curricula.toml``: the named settings of MAESTRO's difficulty rule (:class:`CurriculumSetting`).
* ``ablation_rows.toml``: the MAESTRO ablation's named rows (:class:`AblationRow`) and the reference-architect
  queue (:class:`Queue`).

Every table is defined in one file only; the modules that use one read it through this loader. A file that does not
fit its schema (an unknown key, a value of the wrong type, a name that no setting has) fails when it is loaded, with a
:class:`SettingsError` naming the file, the table and the key. Floats are the exact doubles the runs used: TOML reads
a float as Python's ``float()`` does, so a written ``repr`` is that double to the bit.

This module sits between the parts (it types MADDPG's overrides with :mod:`marlinkit.algos.maddpg_overrides`) and the
papers, which read it; it imports no experiment, no presets and no runs.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from marlinkit.algos.maddpg_overrides import MADDPGOverrides

#: The run presets of ``presets.toml`` (the workshop's class preset aside); the presets loader refuses a file whose
#: presets are not these.
PresetName = Literal["smoke", "quick", "paper"]

SETTINGS_DIR = Path(__file__).resolve().parent
PRESETS_FILE = SETTINGS_DIR / "presets.toml"
MADDPG_FILE = SETTINGS_DIR / "maddpg_settings.toml"
CURRICULA_FILE = SETTINGS_DIR / "curricula.toml"
ROWS_FILE = SETTINGS_DIR / "ablation_rows.toml"


class SettingsError(ValueError):
    """A settings file that does not fit its schema: the message names the file, the table and the key."""

    def __init__(self, path: Path, table: str, key: str, problem: str):
        self.path, self.table, self.key, self.problem = Path(path), table, key, problem
        where = f"[{table}]" if table else "top level"
        super().__init__(f"{self.path}: {where}{f' key {key!r}' if key else ''}: {problem}")

    def __reduce__(self):  # raised in a worker process, re-raised in the caller's
        return type(self), (self.path, self.table, self.key, self.problem)


def read(path: Path) -> dict[str, Any]:
    """The TOML file at ``path`` as nested dicts (a syntax error is a :class:`SettingsError` naming the file)."""
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(path, "", "", f"not valid TOML ({error})") from None


#: The Python types a schema names, and how a value of each is written in TOML (for the error messages).
_WRITTEN = {str: "a string", int: "an integer", float: "a float (write 1.0, not 1)", bool: "true or false",
            list: "an array", dict: "a table"}


def check_type(path: Path, table: str, key: str, value: Any, kind: type) -> Any:
    """``value`` if it is exactly of ``kind`` (an int is no float and a bool no int: each would change a run's key)."""
    if type(value) is not kind:
        raise SettingsError(path, table, key, f"must be {_WRITTEN[kind]}, got {value!r}")
    return value


def check_table(path: Path, table: str, value: Any, schema: dict[str, type], required: tuple[str, ...] = ()) -> dict:
    """``value`` if it is a table whose keys are in ``schema`` (each of its type) and that holds every ``required``."""
    if not isinstance(value, dict):
        raise SettingsError(path, table, "", f"must be a table, got {value!r}")
    for key, item in value.items():
        if key not in schema:
            raise SettingsError(path, table, key, f"unknown key; known: {', '.join(schema)}")
        check_type(path, table, key, item, schema[key])
    missing = [key for key in required if key not in value]
    if missing:
        raise SettingsError(path, table, missing[0], "missing")
    return value


def check_name(path: Path, table: str, key: str, name: str, known: dict[str, Any], what: str) -> str:
    """``name`` if ``known`` has it, else a :class:`SettingsError` listing the known names of ``what``."""
    if name not in known:
        raise SettingsError(path, table, key, f"names no {what} {name!r}; known: {', '.join(known)}")
    return name


# ----- MADDPG settings --------------------------------------------------------------------------

@dataclass(frozen=True)
class MADDPGSetting:
    """One named MADDPG setting: what it changes of MADDPG's defaults, and the traffic it trains on."""

    description: str
    """What the setting is, in words (its name is a short code, e.g. "ue25": an update every 25 steps)."""
    maddpg: MADDPGOverrides = MADDPGOverrides()
    """The MADDPGConfig fields it changes (none: MADDPGConfig's defaults)."""
    train_difficulty: float | None = None
    """None: train on the real flow. A difficulty d: train on the curriculum's deterministic context for d, one
    sample per run (context seed = the run's seed), evaluations still on the real flow (does training on synthetic
    traffic transfer?). Such a setting is the sweep's own: an ablation runs only those on the real flow."""
    beats_random: bool = False
    """Whether its learners were trained to beat the random phase switcher on held-out traffic
    (:mod:`marlinkit.maestro.heldout`); the paper preset's rows of the others are labelled barely above random."""


_SETTING_SCHEMA = {"description": str, "base": str, "maddpg": dict, "train_difficulty": float, "beats_random": bool}


@functools.cache
def _override_types() -> dict[str, type]:
    """Each :class:`MADDPGOverrides` field's type, without its None (``int | None`` -> int)."""
    hints = typing.get_type_hints(MADDPGOverrides)
    return {f.name: next(t for t in typing.get_args(hints[f.name]) if t is not type(None))
            for f in dataclasses.fields(MADDPGOverrides)}


def _maddpg_setting(path: Path, name: str, value: Any, earlier: dict[str, MADDPGSetting]) -> MADDPGSetting:
    """One table of ``maddpg_settings.toml``: ``base`` (a setting above it) gives the fields it starts from."""
    check_table(path, name, value, _SETTING_SCHEMA, required=("description",))
    fields = {}
    if "base" in value:
        base = check_name(path, name, "base", value["base"], earlier, "MADDPG setting above it")
        fields = earlier[base].maddpg.given()
    table = f"{name}.maddpg"
    fields.update(check_table(path, table, value.get("maddpg", {}), _override_types()))
    return MADDPGSetting(value["description"], MADDPGOverrides(**fields), value.get("train_difficulty"),
                         value.get("beats_random", False))


@functools.cache
def maddpg_settings(path: Path = MADDPG_FILE) -> dict[str, MADDPGSetting]:
    """The named MADDPG settings of ``path``, by name, in the file's order."""
    out: dict[str, MADDPGSetting] = {}
    for name, value in read(path).items():
        out[name] = _maddpg_setting(path, name, value, out)
    return out


def paper_maddpg() -> MADDPGOverrides:
    """MADDPG as Lowe et al. (2017) ran it, where :class:`~marlinkit.algos.maddpg.MADDPGConfig`'s default departs
    from them: the ``paper`` setting, which MAESTRO's ``paper`` preset and the sweep's ``paper`` run."""
    return maddpg_settings()["paper"].maddpg


# ----- curriculum settings ----------------------------------------------------------------------

@dataclass(frozen=True)
class CurriculumSetting:
    """One named setting of the difficulty rule: its target and starting difficulty (None: the rule's defaults)."""

    description: str
    """What the setting is, and where its numbers come from."""
    target: float | None = None
    """The target windowed score on the paper's 165 scale (None: 165, the max-pressure level)."""
    d_initial: float | None = None
    """The starting difficulty (None: the easiest, the rule's default)."""

    def overrides(self) -> dict[str, float]:
        """The :class:`~marlinkit.maestro.curriculum.CurriculumConfig` fields it sets."""
        return {k: v for k, v in (("target", self.target), ("d_initial", self.d_initial)) if v is not None}


@functools.cache
def curricula(path: Path = CURRICULA_FILE) -> dict[str, CurriculumSetting]:
    """The named curriculum settings of ``path``, by name, in the file's order."""
    schema = {"description": str, "target": float, "d_initial": float}
    return {name: CurriculumSetting(**check_table(path, name, value, schema, required=("description",)))
            for name, value in read(path).items()}


# ----- ablation rows and the reference-architect queue ------------------------------------------

@dataclass(frozen=True)
class AblationRow:
    """One named row of MAESTRO's ablation: what it sets on top of a preset's ``ablation`` section."""

    description: str
    """What the row runs, in words."""
    llm: str | None = None
    """The architect ("reference": the reference architect, a surrogate, not an LLM; None: the preset's LLM)."""
    engine: str | None = None
    """The traffic engine (None: the preset's)."""
    curriculum: str | None = None
    """A curriculum setting of ``curricula.toml`` (None: the preset's)."""
    maddpg_setting: str | None = None
    """A MADDPG setting of ``maddpg_settings.toml`` (None: the preset's MADDPG)."""

    def overrides(self) -> dict[str, str]:
        """The ablation ``Config`` fields it sets, in field order."""
        named = (f.name for f in dataclasses.fields(self) if f.name != "description")
        return {name: getattr(self, name) for name in named if getattr(self, name) is not None}


@dataclass(frozen=True)
class Queue:
    """The reference-architect queue (:mod:`marlinkit.maestro.reference_queue`)."""

    preset: str
    """The preset whose ``ablation`` section it runs under."""
    row: str
    """The row it runs by default (a table of ``[rows]``)."""
    order: tuple[str, ...]
    """The configurations within a seed, in the order they run."""
    paper_seeds: tuple[int, ...]
    """The paper's seeds, run first."""


def _row(path: Path, name: str, value: Any) -> AblationRow:
    """One table of ``[rows]``: its curriculum and MADDPG setting, where given, are named settings of their files."""
    table = f"rows.{name}"
    schema = {"description": str, "llm": str, "engine": str, "curriculum": str, "maddpg_setting": str}
    row = AblationRow(**check_table(path, table, value, schema, required=("description",)))
    if row.curriculum is not None:
        check_name(path, table, "curriculum", row.curriculum, curricula(), "curriculum setting")
    if row.maddpg_setting is not None:
        on_real_flow = {k: s for k, s in maddpg_settings().items() if s.train_difficulty is None}
        check_name(path, table, "maddpg_setting", row.maddpg_setting, on_real_flow, "MADDPG setting on the real flow")
    return row


@functools.cache
def ablation_rows(path: Path = ROWS_FILE) -> dict[str, AblationRow]:
    """The named ablation rows of ``path`` (its ``[rows]``), by name, in the file's order."""
    raw = read(path)
    check_table(path, "", raw, {"rows": dict, "queue": dict}, required=("rows",))
    return {name: _row(path, name, value) for name, value in raw["rows"].items()}


@functools.cache
def queue(path: Path = ROWS_FILE) -> Queue:
    """The reference-architect queue of ``path`` (its ``[queue]``); its row is one of the file's rows."""
    raw = read(path)
    if "queue" not in raw:
        raise SettingsError(path, "", "queue", "missing")
    schema = {"preset": str, "row": str, "order": list, "paper_seeds": list}
    value = check_table(path, "queue", raw["queue"], schema, required=tuple(schema))
    check_name(path, "queue", "row", value["row"], ablation_rows(path), "row")
    order = tuple(check_type(path, "queue", "order", a, str) for a in value["order"])
    seeds = tuple(check_type(path, "queue", "paper_seeds", s, int) for s in value["paper_seeds"])
    return Queue(value["preset"], value["row"], order, seeds)
