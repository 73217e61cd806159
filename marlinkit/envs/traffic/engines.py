"""Traffic engines behind one small interface: load a flow, set signals, step, read lanes.

* :class:`SumoEngine` (default): SUMO 1.28 through libsumo (in-process, no TraCI socket).
  libsumo holds one simulation per process, so at most one SumoEngine may be open at a time;
  a new episode reloads the same simulation (``libsumo.load``). Run several simulations in
  parallel only in separate processes (see :func:`marlinkit.envs.traffic.controllers.run_in_subprocess`).
* :class:`~.cityflow_engine.CityFlowEngine` (module :mod:`.cityflow_engine`): CityFlow when
  ``cityflow`` is importable (it is not on PyPI: ``make cityflow`` builds it). Config paths are
  absolute, a failed load (which CityFlow only prints) raises, and Engines are never destroyed
  while the process lives (destroying one right after ``next_step`` can hang its threads): each
  CityFlowEngine holds its own Engine, hands it to an idle pool on ``close()``, and a later load
  of the same roadnet and flow reuses an idle one (``reset()`` each episode), so memory grows with
  the number of distinct flows and of environments open at once in a CityFlow process.

``marlinkit.envs.traffic.env.make_engine`` opens one by name. Both read the same 192 observed lanes (the 12 incoming
lanes of each of the 16 intersections, see :attr:`Network.observed_lanes`) and return a :class:`Reading` per second.

Signals are coded per intersection: ``k`` in 0..3 is phase k green (``PHASES``), ``4 + k`` is the
change interval after phase k (SUMO: yellow on the links phase k served; CityFlow: the
roadnet's all-red phase 0). Right turns are green in every phase.
"""

from __future__ import annotations

import abc
import importlib.util
import os
from itertools import compress
from typing import Literal, get_args
from operator import ne
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from marlinkit import paths
from marlinkit.envs.traffic.context import Flow, write_sumo_routes
from marlinkit.envs.traffic.data import MOVEMENTS, SOURCE_HINT, SUMO_NET, DataError, Network

#: The 4 actions: the movements each phase serves as (axis of the approach, movement).
PHASES = ("WT_ET", "NT_ST", "WL_EL", "NL_SL")
PHASE_MOVES = (("EW", "through"), ("NS", "through"), ("EW", "left"), ("NS", "left"))
ENGINES = ("sumo", "cityflow")
#: Rows of :attr:`Reading.lanes`.
INFLOW, OUTFLOW, HALTING, COUNT = range(4)
#: Where generated engine files (routes, flows, configs) go: never the data folder.
GENERATED_DIR = paths.BUILD_DIR / "cache" / "traffic"


#: The traffic engines: SUMO (libsumo) and CityFlow.
EngineName = Literal["sumo", "cityflow"]
ENGINES = get_args(EngineName)


def available_engines() -> dict[str, bool]:
    return {"sumo": importlib.util.find_spec("libsumo") is not None,
            "cityflow": importlib.util.find_spec("cityflow") is not None}


def axis(heading: int) -> str:
    return "EW" if heading in (0, 2) else "NS"


@dataclass
class Reading:
    """What an engine reports after one simulated second.

    ``lanes`` is one (4, lanes) array over the observed lanes, rows ``INFLOW``, ``OUTFLOW``,
    ``HALTING``, ``COUNT`` (in this order so that the environment reads contiguous blocks);
    ``flows``, ``halting`` and ``count`` are views of it.
    """

    time: float
    lanes: np.ndarray
    departed: list[int]  # flow indices of vehicles inserted into the network during the second
    arrived: list[int]  # flow indices of vehicles that reached the end of their route

    @property
    def flows(self) -> np.ndarray:
        """(2, lanes): vehicles that entered / left each lane during the second (leaving is almost
        always crossing the stop line)."""
        return self.lanes[INFLOW:OUTFLOW + 1]

    @property
    def halting(self) -> np.ndarray:
        """Vehicles slower than 0.1 m/s on each lane."""
        return self.lanes[HALTING]

    @property
    def count(self) -> np.ndarray:
        """Vehicles on each lane."""
        return self.lanes[COUNT]


class _LaneReader:
    """:attr:`Reading.lanes` from the vehicle ids on each observed lane, second after second.

    Only lanes whose ids differ from last second's are looked at (a few a second): their count
    changes, an id new on a lane entered it, an id gone from it left it (into the junction, to a
    neighbouring lane, or off the end of its route). A vehicle is on one lane at a time, so this
    equals tracking each vehicle's lane, without touching every vehicle every second.

    :attr:`lane_of` is that tracking, kept up to date from the same few lanes: the index of the
    observed lane each vehicle is on now (vehicles on no observed lane are absent).
    """

    def __init__(self, n_lanes: int):
        self._lane_range = range(n_lanes)
        self._on_lane: list = [()] * n_lanes  # vehicle ids on each lane last second
        self._count = np.zeros(n_lanes)  # and how many
        self.lane_of: dict = {}

    def read(self, on_lane) -> np.ndarray:
        """The lanes array (halting left 0 for the engine to fill)."""
        before, self._on_lane = self._on_lane, on_lane
        lanes, count, lane_of = np.zeros((4, len(on_lane))), self._count, self.lane_of
        for j in compress(self._lane_range, map(ne, on_lane, before)):
            count[j] = len(on_lane[j])
            now, old = set(on_lane[j]), set(before[j])
            entered, left = now - old, old - now
            lanes[INFLOW, j] = len(entered)
            lanes[OUTFLOW, j] = len(left)
            for vehicle in left:  # unless it is already on the lane it moved to
                if lane_of.get(vehicle) == j:
                    del lane_of[vehicle]
            for vehicle in entered:
                lane_of[vehicle] = j
        lanes[COUNT] = count
        return lanes


class Engine(abc.ABC):
    """One simulation of the Hangzhou network."""

    name: str
    version: str

    def __init__(self, network: Network):
        self.network = network
        self.lanes = network.observed_lanes
        self._index: dict[str, int] = {}
        self.flow: Flow | None = None
        self._lane_reader = _LaneReader(len(self.lanes))
        self._signals: list[int] = []

    @abc.abstractmethod
    def load(self, flow: Flow, seed: int) -> None:
        """Start an episode at time 0 with ``flow`` and ``seed``."""

    def set_signals(self, codes: list[int]) -> None:
        """Set every intersection's signal (codes as in the module docstring); unchanged ones are skipped."""
        for i, code in enumerate(codes):
            if code != self._signals[i]:
                self._apply_signal(i, code)
                self._signals[i] = code

    @abc.abstractmethod
    def _apply_signal(self, agent_index: int, code: int) -> None: ...

    @abc.abstractmethod
    def advance(self) -> None:
        """Advance one second without reading anything (the raw engine step)."""

    @abc.abstractmethod
    def step(self) -> Reading:
        """Advance one second and read the lanes."""

    @abc.abstractmethod
    def distances(self, indices: list[int]) -> dict[int, float]:
        """Metres driven so far by the given vehicles that are still in the network."""

    def close(self) -> None:
        """Release the simulation (SUMO); CityFlow Engines stay alive, see the module docstring."""

    def _start_episode(self, flow: Flow) -> None:
        self.flow = flow
        self._index = {self._vehicle_name(i): i for i in range(len(flow))}
        self._lane_reader = _LaneReader(len(self.lanes))
        self._signals = [-1] * len(self.network.agents)

    @staticmethod
    @abc.abstractmethod
    def _vehicle_name(index: int) -> str:
        """The engine's id of the flow's ``index``-th vehicle."""

    def _check_routes(self, flow: Flow) -> None:
        for i, route in enumerate(flow.routes):
            unknown = [road for road in route if road not in self.network.roads]
            if unknown or not route:
                raise ValueError(f"vehicle {i} has an invalid route {route} (unknown roads {unknown})")


def _generated(flow: Flow, suffix: str) -> Path:
    return GENERATED_DIR / f"{flow.key}{suffix}"


# ----------------------------------------------------------------------------- SUMO
_SUMO_OPEN: list["SumoEngine"] = []


def _import_libsumo():
    """libsumo, without the pyarrow warning it prints at import.

    At import libsumo compares the installed pyarrow's version with the Arrow it was built
    against (23.0; pyarrow here is newer, pulled in by ray[rllib]) and prints a warning on a
    mismatch. The wheel bundles its own Arrow under a private soname (libsumo.libs/
    libarrow-<hash>.so.2300), so the two never clash, and SUMO's Parquet output is not used here.
    SUMO skips the check when ``LIBSUMO_AS_TRACI=quiet``; that variable also makes a later
    ``import traci`` load libsumo, so traci is imported first (libsumo imports it anyway) and the
    variable is set only for the import.
    """
    import traci  # noqa: F401

    previous = os.environ.get("LIBSUMO_AS_TRACI")
    os.environ["LIBSUMO_AS_TRACI"] = "quiet"
    try:
        import libsumo
    finally:
        if previous is None:
            del os.environ["LIBSUMO_AS_TRACI"]
        else:
            os.environ["LIBSUMO_AS_TRACI"] = previous
    return libsumo


class SumoEngine(Engine):
    """SUMO via libsumo, on the LibSignal SUMO net of the data folder (same road ids as CityFlow)."""

    name = "sumo"

    def __init__(self, network: Network):
        super().__init__(network)
        libsumo = _import_libsumo()
        self._ls = libsumo
        from libsumo import _libsumo  # the flat functions: one Python call per read instead of two

        self._halting = _libsumo.lane_getLastStepHaltingNumber
        self._vehicle_ids = _libsumo.lane_getLastStepVehicleIDs
        self._time = _libsumo.simulation_getTime
        self._departed = _libsumo.simulation_getDepartedIDList
        self._arrived = _libsumo.simulation_getArrivedIDList
        self.version = "SUMO"  # completed from the running simulation on load
        self.net_file = network.folder / SUMO_NET
        self.lane_ids = [f"{road}_{2 - MOVEMENTS.index(move)}" for road, move in self.lanes]  # SUMO lane 0 = right
        self._green: list[list[str]] = []
        self._yellow: list[list[str]] = []
        self._started = False

    def load(self, flow: Flow, seed: int) -> None:
        self._check_routes(flow)
        if _SUMO_OPEN and _SUMO_OPEN[0] is not self:
            raise RuntimeError("libsumo runs one simulation per process and another SumoEngine is open: close() it, "
                               "or run this simulation in a subprocess (controllers.run_in_subprocess)")
        routes = _generated(flow, ".rou.xml")
        if not routes.exists():
            write_sumo_routes(flow, routes)
        args = ["-n", str(self.net_file), "-r", str(routes), "--seed", str(int(seed)), "--no-step-log", "true",
                "--no-warnings", "true", "--duration-log.disable", "true", "--begin", "0"]
        try:
            if self._started:
                self._ls.load(args)
            else:
                self._ls.start(["sumo", *args])
                self._started = True
                _SUMO_OPEN.append(self)
        except self._ls.TraCIException as error:  # libsumo raises this for bad input files
            raise DataError(f"SUMO could not load {self.net_file} with {routes}: {error}. {SOURCE_HINT}") from error
        if not self._green:
            self._build_signal_states()
        if len(flow) and self._ls.simulation.getMinExpectedNumber() == 0:
            raise DataError(f"SUMO loaded no vehicles from {routes}")
        self.version = "SUMO " + self._ls.simulation.getVersion()[1].split()[-1].rsplit(".", 1)[0]
        self._start_episode(flow)

    def _build_signal_states(self) -> None:
        """Signal strings per agent and phase, built from each link's approach axis and direction."""
        tl, lane = self._ls.trafficlight, self._ls.lane
        known = set(tl.getIDList())
        missing = [a for a in self.network.agents if a not in known]
        if missing:
            raise DataError(f"{self.net_file} has no traffic light for {missing}. {SOURCE_HINT}")
        unknown_lanes = set(self.lane_ids) - set(lane.getIDList())
        if unknown_lanes:
            raise DataError(f"{self.net_file} lacks lanes {sorted(unknown_lanes)[:4]}... {SOURCE_HINT}")
        for agent in self.network.agents:
            green, yellow = [], []
            links = tl.getControlledLinks(agent)
            moves = []
            for link in links:
                in_lane, out_lane, _ = link[0]
                direction = next(l[6] for l in lane.getLinks(in_lane) if l[0] == out_lane)
                road = in_lane.rsplit("_", 1)[0]
                moves.append((axis(self.network.roads[road].heading),
                              {"l": "left", "s": "through", "r": "right"}[direction]))
            for phase_axis, phase_move in PHASE_MOVES:
                served = [m == (phase_axis, phase_move) for m in moves]
                green.append("".join("G" if (m[1] == "right" or s) else "r" for m, s in zip(moves, served)))
                yellow.append("".join("G" if m[1] == "right" else ("y" if s else "r") for m, s in zip(moves, served)))
            self._green.append(green)
            self._yellow.append(yellow)

    def phase_state(self, agent_index: int, code: int) -> str:
        """The SUMO signal string for a signal code (useful for checks against the net's program)."""
        return self._green[agent_index][code] if code < 4 else self._yellow[agent_index][code - 4]

    def _apply_signal(self, agent_index: int, code: int) -> None:
        self._ls.trafficlight.setRedYellowGreenState(self.network.agents[agent_index],
                                                     self.phase_state(agent_index, code))

    def advance(self) -> None:
        self._ls.simulationStep()

    def step(self) -> Reading:
        ls = self._ls
        ls.simulationStep()
        lanes = self._lane_reader.read(list(map(self._vehicle_ids, self.lane_ids)))
        occupied = np.flatnonzero(lanes[COUNT])  # an empty lane has no halted vehicle: read the occupied ones only
        lanes[HALTING, occupied] = list(map(self._halting, map(self.lane_ids.__getitem__, occupied.tolist())))
        index = self._index.__getitem__
        return Reading(self._time(), lanes, list(map(index, self._departed())), list(map(index, self._arrived())))

    @staticmethod
    def _vehicle_name(index: int) -> str:
        return str(index)  # as written by write_sumo_routes

    def distances(self, indices: list[int]) -> dict[int, float]:
        running = set(self._ls.vehicle.getIDList())
        return {i: self._ls.vehicle.getDistance(str(i)) for i in indices if str(i) in running}

    def close(self) -> None:
        if self._started:
            self._ls.close()
            self._started = False
            _SUMO_OPEN.remove(self)
