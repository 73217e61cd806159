"""One setting string -> an LLM backend, so the paper's model is a one-line change.

=====================================================  =========================================
setting                                                backend
=====================================================  =========================================
``smollm2``                                            SmolLM2-135M-Instruct from PyPI (default)
``transformers:/path/to/Llama-3.1-8B-Instruct``        any local chat model folder
``openai:http://localhost:8000/v1#meta-llama/...``     OpenAI-compatible endpoint (vLLM, Ollama)
``scripted``                                           protocol-following script, no model
=====================================================  =========================================

The setting comes from a parameter or the ``MARLINKIT_LLM`` environment variable.

Every call goes through a transcript cache that replays strictly: a call not in the transcript is
an error (``TranscriptMiss``), never a silent model load. Recording is chosen explicitly, with
``MARLINKIT_RECORD=1`` (``RECORD=1 make figures``) or ``record=True``.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

from marlinkit import paths
from marlinkit.errors import ParameterError
from marlinkit.llm.backends.scripted import Script
from marlinkit.llm.base import ChatBackend
from marlinkit.llm.cache import TranscriptCache

ENV_VAR = "MARLINKIT_LLM"
RECORD_VAR = "MARLINKIT_RECORD"
DEFAULT = "smollm2"
KINDS = ("smollm2", "transformers", "openai", "scripted")


def setting(value: str | None = None) -> str:
    """The setting in force: ``value``, else ``$MARLINKIT_LLM``, else ``smollm2``."""
    return value or os.environ.get(ENV_VAR) or DEFAULT


def recording(record: bool | None = None) -> bool:
    """Whether transcript misses call the model and are recorded: ``record`` if given, else ``$MARLINKIT_RECORD``.

    Off by default (strict replay). ``MARLINKIT_RECORD`` accepts 1/true/yes/on and 0/false/no/off/empty.
    """
    if record is not None:
        return bool(record)
    value = os.environ.get(RECORD_VAR, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{RECORD_VAR}={value!r}: use 1 to record transcript misses with the model, 0 to replay strictly")


def check(value: str | None = None) -> str:
    """The setting in force (:func:`setting`), refused with a :class:`ParameterError` naming ``LLM`` unless it is one
    :func:`make_backend` builds; nothing loads."""
    value = setting(value)
    kind, _, arg = value.partition(":")
    if (kind in ("smollm2", "scripted") and not arg) or (kind == "transformers" and arg) or kind == "openai":
        return value
    raise ParameterError("LLM", value, "unknown LLM setting; use one of: smollm2 | scripted | "
                                       "transformers:/path/to/model "
                         f"| openai:http://host:port/v1#model (or set ${ENV_VAR})")


def make_backend(value: str | None = None, script: Script | None = None, model: str | None = None) -> ChatBackend:
    """Build the backend a setting names (weights load lazily, on the first call).

    ``script`` and ``model`` are the ``scripted`` kind's replies and model name: each experiment passes the
    script of its own protocol (MARLIN: ``marlin.negotiation.greedy_robots``; MAESTRO: the architect's
    script); the ``scripted`` kind without one is an error, and the other kinds ignore both.
    """
    value = check(value)
    kind, _, arg = value.partition(":")
    if kind == "smollm2":
        from marlinkit.llm.backends.smollm2 import SmolLM2Backend

        return SmolLM2Backend()
    if kind == "scripted":
        from marlinkit.llm.backends.scripted import ScriptedBackend

        return ScriptedBackend(script, model)
    if kind == "transformers":
        from marlinkit.llm.backends.transformers import TransformersBackend

        return TransformersBackend(arg)
    from marlinkit.llm.backends.openai import OpenAIBackend

    url, _, model = arg.partition("#")
    return OpenAIBackend(url or None, model or None)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def transcript_path(purpose: str, backend: ChatBackend, root: Path | None = None) -> Path:
    """Where the calls of one experiment with one backend are recorded, e.g. ``llm_only__smollm2__....jsonl``."""
    return Path(root or paths.TRANSCRIPTS_DIR) / f"{purpose}__{slug(backend.name)}__{slug(backend.model)}.jsonl"


def cached_backend(value: str | None, purpose: str, record: bool | None = None, root: Path | None = None,
                   script: Script | None = None, model: str | None = None, shared: tuple[str, ...] = (),
                   backend: ChatBackend | None = None) -> ChatBackend:
    """The configured backend behind its transcript cache: recorded calls replay; a new call is an error
    unless recording (:func:`recording`: ``record``, else ``$MARLINKIT_RECORD``), when it is recorded.
    ``shared``: purposes of other runs that make some of the same calls; a recording run copies their
    records of a call instead of calling the model (:class:`~marlinkit.llm.cache.TranscriptCache`).

    A ``scripted`` setting given its own ``script`` (see :func:`make_backend`) plays it uncached:
    the script is its own record, and its replies are computed from the prompt, never looked up.
    ``backend``: an experiment's own backend in place of the setting's model (MAESTRO's reference architect, a
    surrogate that is not an LLM), cached and recorded as a model's replies are.
    """
    if script is not None and setting(value) == "scripted":
        return make_backend("scripted", script, model)
    from_env = os.environ.get(ENV_VAR)
    if not recording(record) and value and from_env and from_env != value:
        warnings.warn(f"${ENV_VAR}={from_env} is not used here: this run replays the recorded {value} replies "
                      "(this preset pins its LLM); record with RECORD=1 to run another", stacklevel=2)
    backend = backend if backend is not None else make_backend(value)
    return TranscriptCache(backend, transcript_path(purpose, backend, root), replay_only=not recording(record),
                           shared=[transcript_path(other, backend, root) for other in shared])


def label(backend: ChatBackend) -> str:
    """How figures name the LLM, e.g. ``smollm2 (SmolLM2-135M-Instruct.Q4_1)``."""
    return f"{backend.name} ({backend.model})"
