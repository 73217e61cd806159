"""Curriculum contexts (MAESTRO Section 4.2) and the vehicle flows both engines run.

A :class:`TrafficContext` is what the architect (an LLM or the deterministic map
:func:`context_for_difficulty`) chooses: demand, per-approach rates, turning shares, asymmetry,
a time profile and vehicle parameters. :meth:`TrafficContext.flow` samples it into a
:class:`Flow` (one departure time and route per vehicle on the real network's roads), which
:func:`write_sumo_routes` and :func:`write_cityflow_flow` write for either engine.

Sampling uses common random numbers: every (second, entry road) slot draws the same uniforms
whatever the context, a vehicle departs when its uniform is below the slot's rate, and its turns
are read from further fixed uniforms. A context with pointwise higher rates therefore contains
every departure of a lower one (turns may differ where the shares differ), which keeps the
difficulty map monotone in demand without relying on luck.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from marlinkit.envs.traffic.data import APPROACHES, MOVEMENTS, Network
from marlinkit.files import atomic_write_text

D_MIN, D_MAX = 0.3, 1.0
#: Longest route a sampled vehicle may take (roads); the real flow's longest is 16.
MAX_ROUTE_ROADS = 16


@dataclass(frozen=True)
class VehicleParams:
    """Vehicle parameters shared by every vehicle of a flow (the data set's values by default)."""

    length: float = 5.0  #: metres
    min_gap: float = 2.5  #: metres kept to the leader when stopped
    max_speed: float = 11.111  #: m/s
    accel: float = 2.0  #: m/s^2
    decel: float = 4.5  #: m/s^2

    def validate(self) -> None:
        for name, low, high in (("length", 2.0, 20.0), ("min_gap", 0.5, 10.0), ("max_speed", 2.0, 30.0),
                                ("accel", 0.5, 6.0), ("decel", 1.0, 9.0)):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and low <= value <= high):
                raise ValueError(f"vehicle.{name} must be in [{low}, {high}], got {value!r}")


@dataclass(frozen=True)
class Flow:
    """Vehicles to simulate: departure second and route (road ids) of each, sorted by departure."""

    departs: tuple[int, ...]
    routes: tuple[tuple[str, ...], ...]
    vehicle: VehicleParams = VehicleParams()
    name: str = ""

    def __len__(self) -> int:
        return len(self.departs)

    @functools.cached_property
    def key(self) -> str:
        """Content hash naming the generated engine files (computed once per flow)."""
        blob = json.dumps([self.departs, self.routes, asdict(self.vehicle)]).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


#: How demand varies over an episode.
ProfileKind = Literal["constant", "peak"]
#: The grid's major road axis (its approach rates are raised by ``asymmetry``).
Axis = Literal["EW", "NS"]


@dataclass(frozen=True)
class TimeProfile:
    """Demand over the episode: constant, or a Gaussian peak on top of the base rate."""

    kind: ProfileKind = "constant"  #: "constant" or "peak"
    peak_time_s: float = 180.0  #: centre of the peak, seconds from the start
    peak_width_s: float = 90.0  #: standard deviation of the peak, seconds
    peak_factor: float = 1.0  #: rate multiplier at the centre of the peak (>= 1)

    def factor(self, t: np.ndarray) -> np.ndarray:
        if self.kind == "constant":
            return np.ones_like(t, dtype=float)
        return 1.0 + (self.peak_factor - 1.0) * np.exp(-0.5 * ((t - self.peak_time_s) / self.peak_width_s) ** 2)

    def validate(self) -> None:
        if self.kind not in get_args(ProfileKind):
            raise ValueError(f"time_profile.kind must be one of {get_args(ProfileKind)}, got {self.kind!r}")
        if not 1.0 <= self.peak_factor <= 4.0:
            raise ValueError(f"time_profile.peak_factor must be in [1, 4], got {self.peak_factor!r}")
        if not self.peak_width_s > 0:
            raise ValueError(f"time_profile.peak_width_s must be > 0, got {self.peak_width_s!r}")


@dataclass(frozen=True)
class TrafficContext:
    """One curriculum context: what traffic an episode sees. Rates are per entry road."""

    demand_level: float = 1.0  #: multiplier on every approach rate
    approach_rates_vph: dict = field(default_factory=lambda: {side: 200.0 for side in APPROACHES})
    """Base arrival rate (vehicles/hour) of each entry road on side N, E, S, W of the grid."""
    route_mix: dict = field(default_factory=lambda: {"through": 0.6, "left": 0.2, "right": 0.2})
    """Probability of each turn at every intersection a vehicle crosses (sums to 1)."""
    asymmetry: float = 0.0  #: the major axis carries (1 + asymmetry) times its base rate
    major_axis: Axis = "EW"  #: "EW" (east-west) or "NS"
    time_profile: TimeProfile = TimeProfile()
    vehicle: VehicleParams = VehicleParams()
    duration_s: int = 360  #: seconds over which vehicles are generated
    seed: int = 0  #: seed of the arrival and route sampling

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError with the offending field; called on construction."""
        if not 0.0 < self.demand_level <= 5.0:
            raise ValueError(f"demand_level must be in (0, 5], got {self.demand_level!r}")
        if set(self.approach_rates_vph) != set(APPROACHES):
            raise ValueError(f"approach_rates_vph needs exactly the sides {APPROACHES}, got "
                             f"{sorted(self.approach_rates_vph)}")
        for side, rate in self.approach_rates_vph.items():
            if not (isinstance(rate, (int, float)) and 0 <= rate <= 1200):
                raise ValueError(f"approach_rates_vph[{side!r}] must be in [0, 1200] veh/h, got {rate!r}")
        if set(self.route_mix) != set(MOVEMENTS):
            raise ValueError(f"route_mix needs exactly {MOVEMENTS}, got {sorted(self.route_mix)}")
        if any(not (isinstance(v, (int, float)) and v >= 0) for v in self.route_mix.values()):
            raise ValueError(f"route_mix shares must be >= 0, got {self.route_mix}")
        if abs(sum(self.route_mix.values()) - 1.0) > 1e-6:
            raise ValueError(f"route_mix shares must sum to 1, got {sum(self.route_mix.values()):.4f}")
        if self.route_mix["through"] < 0.2:
            raise ValueError("route_mix['through'] must be >= 0.2 so that vehicles leave the grid")
        if not 0.0 <= self.asymmetry <= 2.0:
            raise ValueError(f"asymmetry must be in [0, 2], got {self.asymmetry!r}")
        if self.major_axis not in get_args(Axis):
            raise ValueError(f"major_axis must be one of {get_args(Axis)}, got {self.major_axis!r}")
        if not (isinstance(self.duration_s, int) and 1 <= self.duration_s <= 3600 * 4):
            raise ValueError(f"duration_s must be an int in [1, 14400], got {self.duration_s!r}")
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        self.time_profile.validate()
        self.vehicle.validate()

    # ----- conversions -----
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TrafficContext:
        """Build from JSON-like data (e.g. an LLM reply); unknown keys raise ValueError."""
        if not isinstance(data, dict):
            raise ValueError(f"a context must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown context field(s) {unknown}; known: {sorted(known)}")
        data = dict(data)
        try:
            if "time_profile" in data:
                data["time_profile"] = TimeProfile(**data["time_profile"])
            if "vehicle" in data:
                data["vehicle"] = VehicleParams(**data["vehicle"])
        except TypeError as error:
            raise ValueError(f"bad nested context field: {error}") from error
        return cls(**data)

    def describe(self) -> str:
        """One line for prompts and figure captions."""
        rates = "/".join(f"{self.approach_rates_vph[s] * self.demand_level:.0f}" for s in APPROACHES)
        mix = "/".join(f"{100 * self.route_mix[m]:.0f}" for m in ("through", "left", "right"))
        peak = (f", peak x{self.time_profile.peak_factor:.2f} at {self.time_profile.peak_time_s:.0f} s"
                if self.time_profile.kind == "peak" else ", constant demand")
        return (f"demand x{self.demand_level:.2f}: N/E/S/W entry rates {rates} veh/h per road, "
                f"{self.major_axis} major axis +{100 * self.asymmetry:.0f}%, turns through/left/right {mix}%{peak}, "
                f"vehicles {self.vehicle.length:g} m max {self.vehicle.max_speed:g} m/s, {self.duration_s} s, "
                f"seed {self.seed}")

    def entry_rates_vph(self, network: Network) -> dict[str, float]:
        """Rate (veh/h) of every entry road, before the time profile."""
        major = ("E", "W") if self.major_axis == "EW" else ("N", "S")
        out = {}
        for road in network.entries:
            side = network.side_of_entry(road)
            boost = 1.0 + self.asymmetry if side in major else 1.0
            out[road] = self.approach_rates_vph[side] * self.demand_level * boost
        return out

    def flow(self, network: Network) -> Flow:
        """Sample the vehicles of this context on ``network`` (deterministic in the seed)."""
        rng = np.random.default_rng(self.seed)
        n_slots, n_entries = self.duration_s, len(network.entries)
        arrival_u = rng.random((n_slots, n_entries))  # one uniform per (second, entry) slot
        turn_u = rng.random((n_slots, n_entries, MAX_ROUTE_ROADS))  # fixed uniforms for the turns
        rates = self.entry_rates_vph(network)
        per_second = np.array([rates[r] for r in network.entries]) / 3600.0
        prob = np.clip(self.time_profile.factor(np.arange(n_slots))[:, None] * per_second[None, :], 0.0, 1.0)
        cumulative = np.cumsum([self.route_mix[m] for m in MOVEMENTS])
        departs, routes = [], []
        for t, e in zip(*np.nonzero(arrival_u < prob)):
            route = [network.entries[e]]
            for u in turn_u[t, e]:
                if network.roads[route[-1]].end not in network.incoming:
                    break
                move = MOVEMENTS[int(np.searchsorted(cumulative, u, side="right").clip(0, 2))]
                if len(route) == MAX_ROUTE_ROADS - 1:
                    move = "through"  # a last straight run leaves the grid
                route.append(network.turns[(route[-1], move)])
            while network.roads[route[-1]].end in network.incoming:
                route.append(network.turns[(route[-1], "through")])
            departs.append(int(t))
            routes.append(tuple(route))
        return Flow(tuple(departs), tuple(routes), self.vehicle, name=f"context-{self.seed}")


def context_for_difficulty(d: float, seed: int = 0, duration_s: int = 360) -> TrafficContext:
    """The deterministic difficulty -> context map (d in [0.3, 1.0]).

    Every knob moves one way with d, so that no rate falls as d rises: demand x0.5 -> x3.0
    (100 -> 600 veh/h per entry road before asymmetry), E-W asymmetry 0 -> +50 %, left-turn
    share 15 % -> 30 % (taken from through), and a mid-episode peak x1.0 -> x1.5.
    """
    if not (isinstance(d, (int, float)) and D_MIN <= d <= D_MAX):
        raise ValueError(f"difficulty must be in [{D_MIN}, {D_MAX}], got {d!r}")
    x = (d - D_MIN) / (D_MAX - D_MIN)
    left = 0.15 + 0.15 * x
    return TrafficContext(
        demand_level=round(0.5 + 2.5 * x, 6),
        approach_rates_vph={side: 200.0 for side in APPROACHES},
        route_mix={"through": round(0.7 - (left - 0.15), 6), "left": round(left, 6), "right": 0.15},
        asymmetry=round(0.5 * x, 6),
        major_axis="EW",
        time_profile=TimeProfile("peak", peak_time_s=duration_s / 2, peak_width_s=duration_s / 4,
                                 peak_factor=round(1.0 + 0.5 * x, 6)),
        duration_s=duration_s,
        seed=seed,
    )


def json_schema() -> dict:
    """JSON schema of a context, for LLM prompts and validation of their replies."""
    number = {"type": "number"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "TrafficContext",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "demand_level": {**number, "exclusiveMinimum": 0, "maximum": 5},
            "approach_rates_vph": {"type": "object", "additionalProperties": False, "required": list(APPROACHES),
                                   "properties": {s: {**number, "minimum": 0, "maximum": 1200} for s in APPROACHES}},
            "route_mix": {"type": "object", "additionalProperties": False, "required": list(MOVEMENTS),
                          "properties": {m: {**number, "minimum": 0, "maximum": 1} for m in MOVEMENTS},
                          "description": "shares summing to 1; through >= 0.2"},
            "asymmetry": {**number, "minimum": 0, "maximum": 2},
            "major_axis": {"enum": ["EW", "NS"]},
            "time_profile": {"type": "object", "additionalProperties": False, "properties": {
                "kind": {"enum": ["constant", "peak"]}, "peak_time_s": number,
                "peak_width_s": {**number, "exclusiveMinimum": 0},
                "peak_factor": {**number, "minimum": 1, "maximum": 4}}},
            "vehicle": {"type": "object", "additionalProperties": False,
                        "properties": {f.name: number for f in fields(VehicleParams)}},
            "duration_s": {"type": "integer", "minimum": 1, "maximum": 14400},
            "seed": {"type": "integer", "minimum": 0},
        },
    }


# ----- flows from the data set, and engine files -----
def load_flow_file(path: Path) -> Flow:
    """Read a CityFlow flow file (one entry per vehicle, as in the Hangzhou data)."""
    from marlinkit.envs.traffic.data import SOURCE_HINT, DataError

    try:
        raw = json.loads(Path(path).read_text())
        first = raw[0]["vehicle"]
        vehicle = VehicleParams(first["length"], first["minGap"], first["maxSpeed"], first["usualPosAcc"],
                                first["usualNegAcc"])
        entries = sorted(((int(f["startTime"]), tuple(f["route"])) for f in raw), key=lambda item: item[0])
        if any(int(f.get("endTime", f["startTime"])) != int(f["startTime"]) for f in raw):
            raise ValueError("only one-vehicle flow entries (startTime == endTime) are supported")
    except (OSError, ValueError, KeyError, IndexError, TypeError) as error:
        raise DataError(f"cannot read flow {path}: {error!r}. {SOURCE_HINT}") from error
    return Flow(tuple(d for d, _ in entries), tuple(r for _, r in entries), vehicle, name=Path(path).stem)


def truncate(flow: Flow, seconds: int) -> Flow:
    """The vehicles of ``flow`` that depart before ``seconds``."""
    keep = [i for i, d in enumerate(flow.departs) if d < seconds]
    return Flow(tuple(flow.departs[i] for i in keep), tuple(flow.routes[i] for i in keep), flow.vehicle, flow.name)


def write_sumo_routes(flow: Flow, path: Path) -> Path:
    """SUMO routes: vehicle ``i`` is the flow's ``i``-th; one vType, SUMO's default departure lane/speed.

    The defaults (no departLane/departSpeed) are those of the LibSignal route file of the real flow,
    so the real flow written here simulates exactly as that file does.
    """
    v = flow.vehicle
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<routes>",
             f'  <vType id="car" accel="{v.accel}" decel="{v.decel}" length="{v.length}" minGap="{v.min_gap}" '
             f'maxSpeed="{v.max_speed}" width="2.0"/>']
    lines += [f'  <vehicle id="{i}" type="car" depart="{d}"><route edges="{" ".join(r)}"/></vehicle>'
              for i, (d, r) in enumerate(zip(flow.departs, flow.routes))]
    lines.append("</routes>\n")
    atomic_write_text(path, "\n".join(lines))
    return path


def write_cityflow_flow(flow: Flow, path: Path) -> Path:
    """CityFlow flow file: one entry per vehicle, so CityFlow names vehicle ``i`` ``flow_i_0``."""
    v = flow.vehicle
    vehicle = {"length": v.length, "width": 2.0, "maxPosAcc": v.accel, "maxNegAcc": v.decel, "usualPosAcc": v.accel,
               "usualNegAcc": v.decel, "minGap": v.min_gap, "maxSpeed": v.max_speed, "headwayTime": 2}
    entries = [{"vehicle": vehicle, "route": list(r), "interval": 1.0, "startTime": d, "endTime": d}
               for d, r in zip(flow.departs, flow.routes)]
    atomic_write_text(path, json.dumps(entries))
    return path
