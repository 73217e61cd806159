"""The fields of a frozen ``Config``: nested settings a preset may write as a plain mapping (:func:`typed`), labels
that name a run's outputs without entering its key (:func:`label`, :func:`key_fields`) and switches typed as
``Literal`` and checked when the ``Config`` is built (:func:`check_choices`)."""

from __future__ import annotations

import copy
import dataclasses
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any


def typed(cls: type, value: Any, name: str) -> Any:
    """A nested setting as its dataclass ``cls``: kept if it is one, built from a mapping of its fields (those that
    differ from the defaults), None kept; an unknown field is refused by name."""
    if value is None or isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a {cls.__name__} or a mapping of its fields, got {value!r}")
    unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise ValueError(f"unknown {name} setting(s) {unknown}; see {cls.__module__}.{cls.__name__}")
    return cls(**value)


#: Field metadata of a label: a setting that names or places a run's outputs (the preset whose folder holds them, a
#: scratch folder, whether to print progress) without shaping its numbers. A label is left out of every run's key
#: (:func:`key_fields`) and of the ``Config``'s equality, so setting one never changes which committed run is found.
LABEL = {"key": False}


def label(default: Any = None) -> Any:
    """A label field of a frozen ``Config`` (:data:`LABEL`) with its default."""
    return dataclasses.field(default=default, compare=False, metadata=LABEL)


def is_label(field: dataclasses.Field) -> bool:
    return field.metadata.get("key", True) is False


def key_fields(config: Any) -> Any:
    """``dataclasses.asdict(config)`` less its label fields, at every level of nesting: what a run's key is made of."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: key_fields(getattr(config, f.name)) for f in dataclasses.fields(config) if not is_label(f)}
    if isinstance(config, tuple) and hasattr(config, "_fields"):  # a named tuple
        return type(config)(*(key_fields(item) for item in config))
    if isinstance(config, (list, tuple)):
        return type(config)(key_fields(item) for item in config)
    if isinstance(config, dict):
        return {key: key_fields(value) for key, value in config.items()}
    return copy.deepcopy(config)


def required_preset(config: Any) -> str:
    """``config.preset``, the label naming the results folder of an experiment's runs; a ``Config`` built without one
    is refused here, by name (``presets.get`` sets it)."""
    if not getattr(config, "preset", None):
        raise ValueError(f"{type(config).__module__}.{type(config).__name__}.preset is not set: name the preset whose "
                         "results folder holds the runs (presets.get sets it)")
    return config.preset


_CHOICES: dict[tuple[type, str], tuple | None] = {}


def check_choices(config: Any) -> None:
    """Check every field of the dataclass ``config`` whose type is a ``Literal`` (or one or None): a value outside its
    choices raises a ValueError naming the field and the choices. The values stay the plain strings they were, so a
    run's key does not change."""
    for f in dataclasses.fields(config):
        key = (type(config), f.name)
        if key not in _CHOICES:
            _CHOICES[key] = literal_choices(config, f)
        choices = _CHOICES[key]
        value = getattr(config, f.name)
        if choices and value not in choices:
            raise ValueError(f"unknown {f.name} {value!r}: {f.name} must be one of {choices}")


def literal_choices(config: Any, field: dataclasses.Field) -> tuple | None:
    """The values a ``Literal`` field allows (None allowed too when its type is ``Literal[...] | None``), else None."""
    return class_literal_choices(type(config), field)


def class_literal_choices(cls: type, field: dataclasses.Field) -> tuple | None:
    """:func:`literal_choices` of a field of the dataclass ``cls``."""
    kind = field.type
    if isinstance(kind, str):  # a postponed annotation: read in the module that defines the field's class
        owner = next(c for c in cls.__mro__ if field.name in getattr(c, "__annotations__", {}))
        module = sys.modules[owner.__module__].__dict__
        try:
            kind = eval(kind, module)  # noqa: S307 - the class's own annotation
        except Exception:  # noqa: BLE001 - a name imported for type checking only: not a Literal of ours
            return None
    if typing.get_origin(kind) is typing.Literal:
        return typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        literals = [a for a in typing.get_args(kind) if typing.get_origin(a) is typing.Literal]
        if literals:
            return tuple(v for a in literals for v in typing.get_args(a)) + (
                (None,) if type(None) in typing.get_args(kind) else ())
    return None
