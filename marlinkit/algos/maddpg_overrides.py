"""Named changes to :class:`~marlinkit.algos.maddpg.MADDPGConfig`'s defaults, typed (importing this needs no torch).

A preset's MADDPG settings and each setting of MAESTRO's measured sweep are a :class:`MADDPGOverrides`: the
fields it sets, None for every field it leaves at ``MADDPGConfig``'s default. ``seed`` and ``eval_every`` are not
here: a run sets them. The named settings (MADDPG as Lowe et al. (2017) ran it among them, the ``paper`` setting)
are data: ``marlinkit/settings/maddpg_settings.toml``, typed by :func:`marlinkit.settings.maddpg_settings`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from marlinkit.config_fields import typed


@dataclass(frozen=True, repr=False)
class MADDPGOverrides:
    """Fields of :class:`~marlinkit.algos.maddpg.MADDPGConfig` to change (None: keep its default). The batch and
    the update cadence come first: :meth:`given` lists the fields set in this order."""

    batch_size: int | None = None
    """Joint transitions per update."""
    buffer_size: int | None = None
    """Replay capacity in joint transitions."""
    learning_starts: int | None = None
    """Steps collected before the first update."""
    update_every: int | None = None
    """Environment steps between updates."""
    actor_lr: float | None = None
    """Adam learning rate of the actors."""
    critic_lr: float | None = None
    """Adam learning rate of the critics."""
    gamma: float | None = None
    """Discount factor."""
    tau: float | None = None
    """Polyak rate of the target networks."""
    hidden: int | None = None
    """Units of each hidden layer."""
    gumbel_temperature: float | None = None
    """Temperature of the Gumbel-softmax."""
    max_grad_norm: float | None = None
    """Per-agent gradient-norm clip."""
    logit_reg: float | None = None
    """Weight of the squared-logit penalty in the actor loss."""
    products: str | None = None
    """Where the batched update's matrix products run ("torch" or "openblas")."""
    sharing: str | None = None
    """Which networks the agents share ("none", the paper's, or "shared-local")."""
    decision_s: int | None = None
    """Environment steps each chosen action is held."""

    @classmethod
    def of(cls, value: MADDPGOverrides | dict[str, Any] | None) -> MADDPGOverrides:
        """``value`` as overrides: a mapping of field names (an unknown name fails, naming it) or None (none)."""
        return typed(cls, {} if value is None else value, "MADDPG")

    def given(self) -> dict[str, Any]:
        """The fields set, in field order (the form run notes print)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}

    def __repr__(self) -> str:  # the fields set only: MADDPGOverrides(update_every=100)
        return f"MADDPGOverrides({', '.join(f'{k}={v!r}' for k, v in self.given().items())})"

