"""The run presets, read from ``marlinkit/settings/presets.toml`` and resolved here for the Makefile, the CLI and every
notebook.

* ``smoke``: seconds per notebook; what nbval runs in ``make test``.
* ``quick``: the default of ``make figures``; the whole collection fits in ~30 min on 2 CPU cores.
* ``paper``: the papers' full protocol (hours; GPU and a Llama 3.1 endpoint where the paper had them).

Every LLM call replays strictly from ``data/transcripts/`` (a miss is an error); recording is the
explicit ``MARLINKIT_RECORD=1`` (``RECORD=1 make figures``), never a preset default. Only the
workshop's teaching session (``workshop.negotiation.record``) records, because talking to the model
live is its point.

Each preset has one section per experiment. A notebook asks for its section and may override
single values from its papermill parameters: ``presets.get(PRESET, "fig3_training", seeds=[0])`` gives that
experiment's frozen ``Config`` dataclass (``config_class``: fields documented there, bad values refused by field).
Section names are the experiments' module names. The presets sit above the experiments: the command line, the
notebooks and the Makefile resolve a preset here and hand the ``Config`` to the experiment's ``run``; no experiment
imports this module. A nested setting is written in the file as a table of its dataclass's fields, which the
``Config`` builds (e.g. ``mappo``: the ``MAPPOConfig`` settings that differ from the authors'); ``maddpg`` may name a
MADDPG setting of ``maddpg_settings.toml`` instead (:func:`load`).

``workers`` means the same in every section: how many jobs run at once, through
:func:`marlinkit.executors.run_jobs` (at least 1). With 1, jobs run one after another in this
process, except where the experiment gives each job a fresh process (the MAESTRO runs: libsumo
holds one simulation per process).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

from marlinkit import settings
from marlinkit.errors import ParameterError
from marlinkit.settings import SettingsError

PRESET_NAMES = typing.get_args(settings.PresetName)
#: Environment variables that override the executor settings of every section that has them
#: (results are identical on either executor, so they stay out of the run configurations).
EXECUTOR_VARIABLES = {"executor": "MARLINKIT_EXECUTOR", "ray_address": "MARLINKIT_RAY_ADDRESS"}
DEFAULT_PRESET = "quick"

#: The workshop notebooks' default preset, for a class on 2-core laptops: each notebook shows what its text describes
#: (a learning curve above the random floor, MARLIN with the exact planner apart from MARL) in the minutes the workshop
#: README measured. smollm2's replies to the default cells and to the exercises' suggested changes replay from the
#: committed ``data/transcripts/workshop_workshop__*.jsonl``; any other call (a changed prompt) goes to the model live
#: and is recorded to the git-ignored ``workshop_workshop_local__*.jsonl``. Only the ``workshop`` section has it.
WORKSHOP_PRESET = "workshop"
#: The presets a workshop notebook accepts (its ``PRESET`` parameter).
WORKSHOP_PRESETS = (WORKSHOP_PRESET, *PRESET_NAMES)


def _section(path: Path, table: str, values: Any, fragments: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One section of the presets file as plain values: its fragments' keys (``include``), then its own keys; a
    ``maddpg`` given as a name is that MADDPG setting's overrides."""
    settings.check_type(path, table, "", values, dict)
    include = values.get("include", [])
    settings.check_type(path, table, "include", include, list)
    out: dict[str, Any] = {}
    for name in include:
        settings.check_name(path, table, "include", settings.check_type(path, table, "include", name, str),
                            fragments, "fragment")
        shared = sorted(set(out) & set(fragments[name]))
        if shared:
            raise SettingsError(path, table, shared[0], f"set by two of its fragments {include}")
        out.update(copy.deepcopy(fragments[name]))
    out.update({key: value for key, value in values.items() if key != "include"})
    if isinstance(out.get("maddpg"), str):
        known = settings.maddpg_settings()
        out["maddpg"] = known[settings.check_name(path, table, "maddpg", out["maddpg"], known, "MADDPG setting")].maddpg
    return out


def load(path: Path = settings.PRESETS_FILE) -> dict[str, dict[str, dict[str, Any]]]:
    """Every preset of ``path``, section by section, as plain values (:func:`_section`): the presets are
    :data:`PRESET_NAMES` with the same sections, and :data:`WORKSHOP_PRESET` with its ``workshop`` section alone.
    A file that does not fit fails with a :class:`~marlinkit.settings.SettingsError` naming the file, table and key."""
    raw = settings.check_table(path, "", settings.read(path), {"fragments": dict, "presets": dict}, ("presets",))
    fragments = raw.get("fragments", {})
    for name, fragment in fragments.items():
        settings.check_type(path, f"fragments.{name}", "", fragment, dict)
    names = (*PRESET_NAMES, WORKSHOP_PRESET)
    for name in names:
        settings.check_name(path, "presets", name, name, raw["presets"], "preset")
    presets = {}
    for name, sections in raw["presets"].items():
        settings.check_name(path, "presets", name, name, dict.fromkeys(names), "preset the package knows")
        settings.check_type(path, "presets", name, sections, dict)
        presets[name] = {section: _section(path, f"presets.{name}.{section}", values, fragments)
                         for section, values in sections.items()}
    for name in PRESET_NAMES:
        differ = sorted(set(presets[name]) ^ set(presets[DEFAULT_PRESET]))
        if differ:
            raise SettingsError(path, f"presets.{name}", differ[0], f"every preset has the sections of "
                                f"{DEFAULT_PRESET!r}: {', '.join(presets[DEFAULT_PRESET])}")
    if set(presets[WORKSHOP_PRESET]) != {"workshop"}:
        raise SettingsError(path, f"presets.{WORKSHOP_PRESET}", "", "has the workshop section alone")
    return presets


_LOADED = load()
#: The presets of :data:`PRESET_NAMES`, section by section (``get`` hands out copies).
PRESETS: dict[str, dict[str, dict[str, Any]]] = {name: _LOADED[name] for name in PRESET_NAMES}
#: The ``workshop`` preset's one section (:data:`WORKSHOP_PRESET`).
_WORKSHOP_CLASS = _LOADED[WORKSHOP_PRESET]["workshop"]

def check_preset(preset: str) -> str:
    """Return ``preset`` if it is known, else raise a :class:`~marlinkit.errors.ParameterError` naming the valid
    ones."""
    if preset not in PRESETS:
        raise ParameterError("PRESET", preset, f"unknown preset; choose one of {', '.join(PRESET_NAMES)}")
    return preset


def experiments() -> dict[str, ModuleType]:
    """Each section's experiment module (a section is named as its module; its ``Config`` is the section's class)."""
    from marlinkit import paper_audit
    from marlinkit.maestro import ablation, traffic_baselines
    from marlinkit.marlin import (authors_protocol, dynamic_env, fidelity, fig1_scenarios, fig3_training, fig5_hardware,
                                  fig6_scalability, llm_only, workshop)

    modules = (fig3_training, fig5_hardware, dynamic_env, llm_only, fig6_scalability, fig1_scenarios, workshop,
               paper_audit,
               ablation, traffic_baselines, fidelity, authors_protocol)
    return {module.__name__.rsplit(".", 1)[1]: module for module in modules}


def config_class(section: str) -> type:
    """The frozen ``Config`` dataclass of one experiment section (its fields and their docstrings are the reference)."""
    modules = experiments()
    if section not in modules:
        raise ValueError(f"no section {section!r}; known: {sorted(modules)}")
    return modules[section].Config


def check_keys(preset: str, section: str, values: dict[str, Any], path: Path = settings.PRESETS_FILE) -> type:
    """The ``Config`` class of ``section``, once every key of ``preset``'s section (``values``, read from ``path``) is
    one of its fields; a key that is not fails with a :class:`~marlinkit.settings.SettingsError` naming it."""
    cls = config_class(section)
    stray = sorted(set(values) - {f.name for f in dataclasses.fields(cls)})
    if stray:
        raise SettingsError(path, f"presets.{preset}.{section}", stray[0],
                            f"unknown key: {cls.__module__}.{cls.__name__} has no such field")
    return cls


def get(preset: str, section: str, **overrides: Any):
    """One experiment's ``Config`` under ``preset``, with ``overrides`` applied (None keeps the preset's value).

    A field the experiment does not have raises before any compute, naming it and the known fields, so a
    typo in a notebook parameter is never silently ignored; bad values fail in the dataclass, by field.
    """
    if preset == WORKSHOP_PRESET and section == "workshop":
        sections = {"workshop": _WORKSHOP_CLASS}
    elif section == "workshop" and preset not in PRESETS:
        raise ParameterError("PRESET", preset, f"unknown preset; choose one of {', '.join(WORKSHOP_PRESETS)}")
    else:
        sections = PRESETS[check_preset(preset)]
    if section not in sections:
        raise ValueError(f"preset {preset!r} has no section {section!r}; known: {sorted(sections)}")
    cls = check_keys(preset, section, sections[section])
    known = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ValueError(f"unknown {section} setting(s) {unknown}; known: {sorted(known)}")
    derived = sorted(k for k, v in overrides.items() if v is not None and k in getattr(cls, "DERIVED", ()))
    if derived:
        raise ValueError(f"{section} setting(s) {derived} are derived from the section's other fields, not set: "
                         f"{cls.__name__}.DERIVED in {cls.__module__}")
    values = copy.deepcopy(sections[section])
    for key, variable in EXECUTOR_VARIABLES.items():  # one setting moves every grid to Ray: $MARLINKIT_EXECUTOR=ray
        if key in known and os.environ.get(variable):
            values[key] = os.environ[variable]
    given = {k: v for k, v in overrides.items() if v is not None}
    values.update(given)
    if "preset" in known:  # a label: names the results folder, never a run's key
        values.setdefault("preset", preset)
    # a grid negotiating by another preset's protocol
    named = values.get("negotiation") if "negotiation" in known else None
    if isinstance(named, str) and named not in PRESET_NAMES:
        raise ParameterError("NEGOTIATION", named, f"negotiation names a preset: one of {', '.join(PRESET_NAMES)}")
    if "llm_only" in known and values.get("llm_only") is None:  # the grid's negotiation protocol, by preset
        values["llm_only"] = get(named if isinstance(named, str) else preset, "llm_only")
    if "training" in known and values.get("training") is None:  # the Fig. 3 grid a section stands beside
        values["training"] = get(preset, "fig3_training")
    try:
        return cls(**values)
    except ParameterError:
        raise
    except (ValueError, TypeError) as error:  # a notebook parameter PLAN_SOURCE overrides the field plan_source
        named = [k for k in given if k in str(error)]
        if len(named) != 1:
            raise
        raise ParameterError(named[0].upper(), given[named[0]], str(error)) from None


def ablation_config(preset: str, record: bool | None = None, **overrides: Any):
    """The MAESTRO ablation's ``Config``: ``preset``'s ``ablation`` section with ``overrides``; ``record`` None follows
    ``$MARLINKIT_RECORD`` (strict replay). A named ``maddpg_setting`` replaces every MADDPG override, so it is not given
    with ``maddpg``; the preset's own MADDPG named as a setting (paper: "paper") is the preset's runs, not a copy."""
    from marlinkit.llm import config as llm_config

    if overrides.get("maddpg_setting") is not None and "maddpg" in overrides:
        raise ValueError(f"give maddpg_setting={overrides['maddpg_setting']!r} or maddpg={overrides['maddpg']!r}, "
                         "not both: a named setting replaces every MADDPG override")
    cfg = dataclasses.replace(get(preset, "ablation", **overrides), record=llm_config.recording(record))
    if cfg.maddpg_setting is not None and cfg.maddpg == get(preset, "ablation").maddpg:
        cfg = dataclasses.replace(cfg, maddpg_setting=None)
    return cfg
