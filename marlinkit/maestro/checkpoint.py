"""Resumable checkpoints of one MAESTRO run: the MADDPG learner, its replay buffer, every random
state, and whatever loop state the caller adds (:class:`marlinkit.maestro.ablation.LoopState`).

A run resumed from its checkpoint gives the numbers an uninterrupted one would (``tests/maestro/test_ablation.py``).
Checkpoints are transient: a finished run deletes its own.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np

from marlinkit.files import atomic_write

#: Bumped when the layout changes: a checkpoint of another layout is ignored (the run starts over).
FORMAT = 2
_NETWORKS = ("actor", "critic", "target_actor", "target_critic", "actor_opt", "critic_opt")
_BUFFER = ("obs", "next_obs", "actions", "rewards", "terminated")


def save(path: Path, learner, buffer, config_hash: str, **extra: Any) -> None:
    """Everything a run needs to continue exactly where it stopped, written atomically."""
    import torch

    state = {"format": FORMAT, "config_hash": config_hash, **extra}
    state.update({k: getattr(learner, k).state_dict() for k in _NETWORKS})
    # the buffer's filled rows as tensors sharing its memory: torch.save streams tensor data to the file, where a
    # pickled array would be built in memory first (a paper-length run's buffer is ~1.8 GB; its in-memory
    # copies once took a run to 11 GB and the out-of-memory killer)
    state.update(generator=learner.generator.get_state(), rng=learner.rng.bit_generator.state,
                 buffer={k: torch.from_numpy(getattr(buffer, k)[: buffer.size]) for k in _BUFFER}, buffer_pos=buffer.pos,
                 python_random=random.getstate(), numpy_random=np.random.get_state(), torch_random=torch.get_rng_state())
    atomic_write(path, lambda handle: torch.save(state, handle))


def resume(path: Path, learner, buffer, config_hash: str) -> dict[str, Any] | None:
    """Restore ``learner``, ``buffer`` and the random states from ``path`` and return the saved extras;
    None (nothing restored) when there is no checkpoint or it belongs to another configuration or layout."""
    import torch

    if not path.exists():
        return None
    saved = torch.load(path, weights_only=False, mmap=True)  # the buffer is copied from the file's pages, not a second copy in memory
    if saved.get("format") != FORMAT or saved.get("config_hash") != config_hash:
        return None
    for k in _NETWORKS:
        getattr(learner, k).load_state_dict(saved[k])
    learner.generator.set_state(saved["generator"])
    learner.rng.bit_generator.state = saved["rng"]
    for k in _BUFFER:  # tensors (or arrays, in checkpoints written before the buffer was saved as tensors)
        rows = saved["buffer"][k]
        getattr(buffer, k)[: len(rows)] = rows.numpy() if isinstance(rows, torch.Tensor) else rows
    buffer.size, buffer.pos = len(saved["buffer"]["obs"]), saved["buffer_pos"]
    random.setstate(saved["python_random"])
    np.random.set_state(saved["numpy_random"])
    torch.set_rng_state(saved["torch_random"])
    return saved
