"""The reward sandbox's vocabulary: the reward function's inputs (and :class:`RewardInputs`, which reads them from the
traffic environment each second), the limits a sandbox process runs under, the error a failing stage raises and the
verdict of a validation."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np

STAGES = ("syntax", "execution", "safety")


class Field(NamedTuple):
    """One input of the reward function: its meaning and the range synthetic samples draw from."""

    name: str
    low: float
    high: float
    doc: str


#: The ``metrics`` dict the reward function receives: one intersection, one 1-s step.
REWARD_FIELDS = (
    Field("queue_length", 0.0, 120.0, "halted vehicles (speed < 0.1 m/s) on the 12 incoming lanes"),
    Field("waiting_time", 0.0, 300.0, "mean seconds the halted incoming vehicles have waited"),
    Field("pressure", -60.0, 60.0, "vehicles on incoming lanes minus vehicles on outgoing lanes"),
    Field("throughput", 0.0, 6.0, "vehicles that left the intersection during this step"),
    Field("delay", 0.0, 1.0, "mean 1 - speed / speed limit over incoming vehicles (0 = free flow)"),
    Field("occupancy", 0.0, 1.0, "mean fraction of incoming lane length covered by vehicles"),
    Field("phase", 0.0, 3.0, "current phase index: 0 WT_ET, 1 NT_ST, 2 WL_EL, 3 NL_SL"),
    Field("phase_duration", 0.0, 120.0, "seconds the current phase has been held"),
)
FIELD_NAMES = tuple(f.name for f in REWARD_FIELDS)


class RewardInputs:
    """The ``metrics`` dict of :data:`REWARD_FIELDS` for all 16 agents, each second.

    Exact from the environment: queue_length, throughput, pressure (its reward terms), occupancy
    (mean of the observation's lane occupancies), phase. Estimated, because the environment does
    not expose per-vehicle data: ``phase_duration`` is the observation's elapsed time (capped at
    60 s); ``delay`` is the fraction of incoming vehicles halted (stands in for 1 - speed/limit);
    ``waiting_time`` is a running mean wait of the halted vehicles (+1 s per second for those still
    queued, newcomers at 0).
    """

    def __init__(self, n_agents: int):
        self.n = n_agents
        self.reset()

    def reset(self) -> None:
        self._wait = np.zeros(self.n)
        self._queue = np.zeros(self.n)

    def update(self, obs: np.ndarray, infos: dict, agents: list[str], phases: np.ndarray) -> dict[str, np.ndarray]:
        queue = np.array([infos[a]["queue"] for a in agents], dtype=float)
        lanes = obs[:, :48].reshape(self.n, 12, 4)
        halted_share, occupancy = lanes[:, :, 0].sum(1), lanes[:, :, 1].sum(1)
        stayed = np.minimum(self._queue, queue)
        self._wait = np.where(queue > 0, (self._wait + 1.0) * stayed / np.maximum(queue, 1.0), 0.0)
        self._queue = queue
        return {
            "queue_length": queue,
            "waiting_time": self._wait.copy(),
            "pressure": np.array([infos[a]["pressure"] for a in agents], dtype=float),
            "throughput": np.array([infos[a]["outflow"] for a in agents], dtype=float),
            "delay": np.where(occupancy > 0, np.minimum(halted_share / np.maximum(occupancy, 1e-9), 1.0), 0.0),
            "occupancy": occupancy / 12.0,
            "phase": phases.astype(float),
            "phase_duration": obs[:, -2].astype(float) * 60.0,
        }


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of the sandbox and the search budget of its probes; the defaults suit training."""

    cpu_seconds: int = 10  # RLIMIT_CPU (hard = soft) of a validation's worker process; a backstop
    episode_cpu_seconds: int = 5  # RLIMIT_CPU of a training episode's worker: the per-episode CPU budget
    memory_bytes: int = 512 * 2**20  # RLIMIT_AS of a worker process (NumPy included)
    wall_seconds: float = 30.0  # wall-clock timeout per batch, enforced by the parent (SIGKILL); a backstop
    max_source_chars: int = 20_000  # longer programs are rejected before parsing
    max_batch_rows: int = 100_000  # rows per evaluate() call; bounds message sizes both ways
    bound: float = 1.0  # safety stage: every value must lie in [-bound, bound]
    deadline_seconds: float = 60.0  # wall clock for one whole validation (or a worker's start), a backstop
    min_spread_fraction: float = 0.05  # safety: 170 x the reward's range on real rows, over the range of
    # the environment reward on them, must reach this (a reward too small to matter is refused)
    search_rows: int = 4096  # safety: rows (or pairs of rows) of each property's seeded random search
    search_rounds: int = 4  # safety: rounds of local search around the worst candidates after it
    search_seed: int = 0  # safety: the search's seed (fixed: the same program gets the same verdict)
    phase_terms: bool = False  # safety: True when the prompt asks for a reward that depends on the phase or
    # on how long it has been held; False: such a dependence is refused

    def __post_init__(self):
        if self.cpu_seconds < 1 or self.episode_cpu_seconds < 1 or self.memory_bytes < 128 * 2**20 \
                or self.wall_seconds <= 0:
            raise ValueError(f"limits too small to start Python with NumPy: {self}")
        if not self.deadline_seconds > 0:
            raise ValueError(f"deadline_seconds must be positive, got {self.deadline_seconds}")
        if not (self.bound > 0 and math.isfinite(self.bound)):
            raise ValueError(f"bound must be positive and finite, got {self.bound}")
        if self.search_rows < 16 or self.search_rounds < 0:
            raise ValueError(f"the search needs at least 16 rows and no negative rounds: {self}")


class SandboxError(RuntimeError):
    """Reward code failed a stage; ``stage`` is one of :data:`STAGES`."""

    def __init__(self, stage: str, reason: str, row: int | None = None):
        super().__init__(f"{stage}: {reason}")
        self.stage, self.reason, self.row = stage, reason, row  # row: the first row that failed, where one did


@dataclass
class Verdict:
    """Outcome of :func:`validate`: accepted, or the first stage that failed and why."""

    accepted: bool
    stage: str | None  # failing stage, None when accepted
    reason: str
    sample_outputs: list[float] = field(default_factory=list)  # raw values (may hold nan/inf)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage reached
    cost: dict[str, float] = field(default_factory=dict)  # rows evaluated; nodes of one evaluation (its bound)
    isolation: dict[str, Any] = field(default_factory=dict)  # how the worker was locked in (uid, Landlock)
    rewrites: list[str] = field(default_factory=list)  # the automatic rewrites the checker made, one line each
    program: str = ""  # the program as checked (after the rewrites), empty when it did not parse
    counterexample: dict[str, Any] = field(default_factory=dict)  # safety: the rows the search found

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary: outputs reduced to counts and finite min/max/mean."""
        values = np.asarray(self.sample_outputs, dtype=float)
        finite = values[np.isfinite(values)]
        outputs = {"n": int(values.size), "non_finite": int(values.size - finite.size)}
        if finite.size:
            outputs.update(min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()))
        data = asdict(self)
        data["sample_outputs"] = outputs
        return data
