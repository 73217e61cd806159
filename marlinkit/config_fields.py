"""Nested settings of a frozen ``Config``: a dataclass field that a preset may write as a plain mapping."""

from __future__ import annotations

import dataclasses
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
