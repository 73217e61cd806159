"""Resumable checkpoints of one MADDPG run (an ablation run or a ``maestro-sweep`` run): the learner, its
replay buffer, every random state, and whatever loop state the caller adds
(:class:`marlinkit.maestro.ablation.LoopState`; the sweep's rows so far).

A run resumed from its checkpoint gives the numbers an uninterrupted one would (``tests/maestro/test_ablation.py``,
``tests/maestro/test_sweep.py``).
Checkpoints are transient: a finished run deletes its own (:func:`remove`).

Layout: ``<name>.checkpoint.pt`` holds the networks, the random states, the extras and the list of
the replay buffer's row files beside it, ``<name>.checkpoint.pt.rows-<start>-<end>`` (rows
start..end-1, with their SHA-256). A save writes only the rows added since the last save and then
the small main file, each atomically, so a paper run writes its ~1.8 GB buffer once in all rather
than once per checkpoint (~17 GB over 19 checkpoints before). A buffer that is full (its ring
overwrites old rows) is written whole, as one row file, at each save. A missing or damaged row file
raises :class:`CheckpointError` naming it; a checkpoint of another configuration or layout is ignored.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import numpy as np

from marlinkit.files import atomic_write

#: Bumped when the layout, or the numerics a resumed run would continue, change: a checkpoint of another format is
#: ignored (the run starts over). 4: MADDPG's vendor-independent numerics (:mod:`marlinkit.algos.portable_math`);
#: a checkpoint of format 3 holds a learner trained by other numerics, and resuming it would mix the two in one run.
FORMAT = 4
_NETWORKS = ("actor", "critic", "target_actor", "target_critic", "actor_opt", "critic_opt")
_BUFFER = ("obs", "next_obs", "actions", "rewards", "terminated")


class CheckpointError(RuntimeError):
    """A checkpoint's row file is missing or damaged; the message names it and what to do."""


def _rows_path(path: Path, start: int, end: int) -> Path:
    return path.with_name(f"{path.name}.rows-{start}-{end}")


def _sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()  # in small blocks: no copy of the rows in memory


def _saved_chunks(path: Path, config_hash: str) -> list[dict[str, Any]]:
    """The row files the checkpoint at ``path`` lists (none for another layout or configuration)."""
    import torch

    if not path.exists():
        return []
    try:
        saved = torch.load(path, weights_only=False, mmap=True)
    except Exception:  # noqa: BLE001 (an unreadable old checkpoint is replaced whole)
        return []
    if saved.get("format") != FORMAT or saved.get("config_hash") != config_hash:
        return []
    return list(saved.get("buffer_chunks", []))


def save(path: Path, learner, buffer, config_hash: str, **extra: Any) -> None:
    """Everything a run needs to continue exactly where it stopped: the buffer rows added since the last
    save into a row file of their own, then the main file listing all row files, each written atomically."""
    import torch

    path = Path(path)
    chunks = _saved_chunks(path, config_hash)
    saved_rows = chunks[-1]["end"] if chunks else 0
    if buffer.size == buffer.capacity or saved_rows > buffer.size:  # the ring overwrites rows: write it whole
        chunks, saved_rows = [], 0
    if buffer.size > saved_rows:
        rows = _rows_path(path, saved_rows, buffer.size)
        # tensors sharing the buffer's memory: torch.save streams them to the file, where a pickled array would be
        # built in memory first (a paper-length buffer's in-memory copies once took a run to 11 GB and the OOM killer)
        atomic_write(rows, lambda handle: torch.save(
            {k: torch.from_numpy(getattr(buffer, k)[saved_rows: buffer.size]) for k in _BUFFER}, handle))
        chunks.append({"file": rows.name, "start": saved_rows, "end": buffer.size, "sha256": _sha256(rows)})
    state = {"format": FORMAT, "config_hash": config_hash, **extra}
    state.update({k: getattr(learner, k).state_dict() for k in _NETWORKS})
    state.update(generator=learner.generator.get_state(), rng=learner.rng.bit_generator.state,
                 buffer_chunks=chunks, buffer_size=buffer.size, buffer_pos=buffer.pos,
                 python_random=random.getstate(), numpy_random=np.random.get_state(),
                 torch_random=torch.get_rng_state())
    atomic_write(path, lambda handle: torch.save(state, handle))
    listed = {chunk["file"] for chunk in chunks}
    for stale in path.parent.glob(f"{path.name}.rows-*"):  # rows of an older layout or a whole rewrite
        if stale.name not in listed:
            stale.unlink(missing_ok=True)


def remove(path: Path) -> None:
    """Delete the checkpoint at ``path`` and its row files (a finished run's)."""
    path = Path(path)
    for rows in path.parent.glob(f"{path.name}.rows-*"):
        rows.unlink(missing_ok=True)
    path.unlink(missing_ok=True)


def _load_rows(path: Path, chunk: dict[str, Any], buffer) -> None:
    import torch

    rows = path.with_name(chunk["file"])
    advice = f"delete {path.name} and its row files in {path.parent} to start the run over"
    if not rows.exists():
        raise CheckpointError(f"checkpoint {path} lists the replay rows {rows.name}, which are missing: {advice}")
    if _sha256(rows) != chunk["sha256"]:
        raise CheckpointError(f"checkpoint rows {rows} are damaged (their SHA-256 differs from the one "
                              f"recorded): {advice}")
    saved = torch.load(rows, weights_only=True, mmap=True)  # copied from the file's pages, not a second copy in memory
    for k in _BUFFER:
        getattr(buffer, k)[chunk["start"]: chunk["end"]] = saved[k].numpy()


def resume(path: Path, learner, buffer, config_hash: str) -> dict[str, Any] | None:
    """Restore ``learner``, ``buffer`` and the random states from ``path`` and return the saved extras;
    None (nothing restored) when there is no checkpoint or it belongs to another configuration or layout."""
    import torch

    path = Path(path)
    if not path.exists():
        return None
    saved = torch.load(path, weights_only=False, mmap=True)
    if saved.get("format") != FORMAT or saved.get("config_hash") != config_hash:
        return None
    for chunk in saved["buffer_chunks"]:
        _load_rows(path, chunk, buffer)
    buffer.size = saved["buffer_size"]
    buffer.pos = saved["buffer_pos"]
    for k in _NETWORKS:
        getattr(learner, k).load_state_dict(saved[k])
    learner.generator.set_state(saved["generator"])
    learner.rng.bit_generator.state = saved["rng"]
    random.setstate(saved["python_random"])
    np.random.set_state(saved["numpy_random"])
    torch.set_rng_state(saved["torch_random"])
    return saved
