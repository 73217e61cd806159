"""Traffic engines behind one small interface: load a flow, set signals, step, read lanes.

* :class:`SumoEngine` (default): SUMO 1.28 through libsumo (in-process, no TraCI socket).
  libsumo holds one simulation per process, so at most one SumoEngine may be open at a time;
  a new episode reloads the same simulation (``libsumo.load``). Run several simulations in
  parallel only in separate processes (see :func:`marlinkit.envs.traffic.controllers.run_in_subprocess`).
* :class:`CityFlowEngine`: CityFlow when ``cityflow`` is importable (it is not on PyPI: ``make
  cityflow`` builds it). Config paths are absolute, a failed load (which CityFlow only prints)
  raises, and Engines are never destroyed while the process lives (destroying one right after
  ``next_step`` can hang its threads): each CityFlowEngine holds its own Engine, hands it to an
  idle pool on ``close()``, and a later load of the same roadnet and flow reuses an idle one
  (``reset()`` each episode), so memory grows with the number of distinct flows and of
  environments open at once in a CityFlow process.

Both read the same 192 observed lanes (the 12 incoming lanes of each of the 16 intersections,
see :attr:`Network.observed_lanes`) and return a :class:`Reading` per second.

Signals are coded per intersection: ``k`` in 0..3 is phase k green (``PHASES``), ``4 + k`` is the
change interval after phase k (SUMO: yellow on the links phase k served; CityFlow: the
roadnet's all-red phase 0). Right turns are green in every phase.
"""

from __future__ import annotations

import abc
import hashlib
import importlib.util
import json
import os
from itertools import compress
from operator import itemgetter, ne
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from marlinkit import paths
from marlinkit.envs.traffic.context import Flow, write_cityflow_flow, write_sumo_routes
from marlinkit.envs.traffic.data import MOVEMENTS, ROADNET, SOURCE_HINT, SUMO_NET, DataError, Network

#: The 4 actions: the movements each phase serves as (axis of the approach, movement).
PHASES = ("WT_ET", "NT_ST", "WL_EL", "NL_SL")
PHASE_MOVES = (("EW", "through"), ("NS", "through"), ("EW", "left"), ("NS", "left"))
ENGINES = ("sumo", "cityflow")
#: Rows of :attr:`Reading.lanes`.
INFLOW, OUTFLOW, HALTING, COUNT = range(4)
#: Where generated engine files (routes, flows, configs) go: never the data folder.
GENERATED_DIR = paths.BUILD_DIR / "cache" / "traffic"


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
    """

    def __init__(self, n_lanes: int):
        self._lane_range = range(n_lanes)
        self._on_lane: list = [()] * n_lanes  # vehicle ids on each lane last second
        self._count = np.zeros(n_lanes)  # and how many

    def read(self, on_lane: list) -> tuple[np.ndarray, np.ndarray]:
        """The lanes array (halting left 0 for the engine to fill) and the indices of the occupied lanes."""
        before, self._on_lane = self._on_lane, on_lane
        lanes, count = np.zeros((4, len(on_lane))), self._count
        for j in compress(self._lane_range, map(ne, on_lane, before)):
            count[j] = len(on_lane[j])
            now, old = set(on_lane[j]), set(before[j])
            lanes[INFLOW, j] = len(now - old)
            lanes[OUTFLOW, j] = len(old - now)
        lanes[COUNT] = count
        return lanes, np.flatnonzero(count)


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
                moves.append((axis(self.network.roads[road].heading), {"l": "left", "s": "through", "r": "right"}[direction]))
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
        self._ls.trafficlight.setRedYellowGreenState(self.network.agents[agent_index], self.phase_state(agent_index, code))

    def advance(self) -> None:
        self._ls.simulationStep()

    def step(self) -> Reading:
        ls = self._ls
        ls.simulationStep()
        lanes, occupied = self._lane_reader.read(list(map(self._vehicle_ids, self.lane_ids)))
        # an empty lane has no halted vehicle: read the occupied ones only
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


# ------------------------------------------------------------------------- CityFlow
#: Every CityFlow Engine made in this process, kept alive to the end (destroying one can hang its threads).
_CITYFLOW_ALIVE: list[object] = []
#: Engines no CityFlowEngine holds now, by (roadnet file, flow key): the next load of that pair reuses one.
_CITYFLOW_IDLE: dict[tuple[str, str], list[object]] = {}


def cityflow_version(cityflow) -> str:
    """``CityFlow <version>``: the module's ``__version__`` (``0.1+81ee0f4`` from ``make cityflow``:
    CityFlow's own 0.1 and the commit built), else the installed distribution's version."""
    version = getattr(cityflow, "__version__", "")
    if not version or version == "dev":
        try:
            from importlib.metadata import version as dist_version

            version = dist_version("CityFlow")
        except Exception:  # noqa: BLE001 (a build without metadata: say so rather than fail)
            version = version or "unknown version"
    return f"CityFlow {version}"


def cityflow_phase_ids(network: Network) -> list[list[int]]:
    """Per agent: the roadnet's phase index for each of PHASES, then its all-red change phase.

    Found from which movements each roadnet phase serves (right turns aside), not assumed.
    """
    raw = json.loads((network.folder / ROADNET).read_text())
    kinds = {"turn_left": "left", "go_straight": "through", "turn_right": "right"}
    out = []
    for node in sorted((n for n in raw["intersections"] if not n["virtual"]), key=lambda n: n["id"]):
        links = [(axis(network.roads[link["startRoad"]].heading), kinds[link["type"]]) for link in node["roadLinks"]]
        by_served = {}
        for index, phase in enumerate(node["trafficLight"]["lightphases"]):
            served = frozenset(links[k] for k in phase["availableRoadLinks"] if links[k][1] != "right")
            by_served.setdefault(served, index)
        try:
            out.append([by_served[frozenset({move})] for move in PHASE_MOVES] + [by_served[frozenset()]])
        except KeyError as error:
            raise DataError(f"{node['id']} in {ROADNET} lacks the phase serving {error}. {SOURCE_HINT}") from error
    return out


class CityFlowEngine(Engine):
    """CityFlow (optional; not on PyPI, ``make cityflow`` builds it) on the data folder's CityFlow roadnet.

    Each CityFlowEngine holds its own CityFlow Engine, so two live environments never share a
    simulation. An Engine is never destroyed: ``close()`` (or loading another flow) hands it to a
    process-wide idle pool, from which the next load of the same roadnet and flow takes it.

    Seeds: CityFlow is deterministic here: with fixed routes and lane changing off its random
    generator only orders vehicles internally, so the seed passed to :meth:`load` (given to
    ``set_random_seed``) changes nothing and only the flow (the curriculum context's seed) varies.
    """

    name = "cityflow"

    def __init__(self, network: Network, threads: int = 1):
        super().__init__(network)
        import cityflow

        self._cityflow = cityflow
        self.version = cityflow_version(cityflow)
        self.threads = threads
        self.lane_ids = [f"{road}_{MOVEMENTS.index(move)}" for road, move in self.lanes]  # CityFlow lane 0 = left
        self._phase_ids = cityflow_phase_ids(network)
        self._roadnet = str((network.folder / ROADNET).resolve())
        self._engine = None
        self._engine_key: tuple[str, str] | None = None
        self._running: set[str] = set()
        self._lane_vehicles = itemgetter(*self.lane_ids)
        self._road_length = {road: r.length for road, r in network.roads.items()}

    def load(self, flow: Flow, seed: int) -> None:
        self._check_routes(flow)
        key = (self._roadnet, flow.key)
        if key != self._engine_key:
            self._release()
            idle = _CITYFLOW_IDLE.get(key)
            self._engine = idle.pop() if idle else self._new_engine(flow)
            self._engine_key = key
        self._engine.reset()
        self._engine.set_random_seed(int(seed))
        self._running = set()
        self._start_episode(flow)

    def _release(self) -> None:
        if self._engine is not None:
            _CITYFLOW_IDLE.setdefault(self._engine_key, []).append(self._engine)
            self._engine, self._engine_key = None, None

    def close(self) -> None:
        """Hand the Engine to the idle pool (it stays alive, see the class docstring)."""
        self._release()

    def _new_engine(self, flow: Flow):
        """A CityFlow Engine for ``flow``, checked: CityFlow only prints a failed load and runs empty."""
        flow_file = _generated(flow, ".cityflow.json")
        if not flow_file.exists():
            write_cityflow_flow(flow, flow_file)
        config = {"interval": 1.0, "seed": 0, "dir": "", "roadnetFile": self._roadnet,
                  "flowFile": str(flow_file.resolve()), "rlTrafficLight": True, "laneChange": False,
                  "saveReplay": False, "roadnetLogFile": "", "replayLogFile": ""}
        folder_tag = hashlib.sha256(self._roadnet.encode()).hexdigest()[:8]  # one config per data folder and flow
        config_file = _generated(flow, f".{folder_tag}.cityflow-config.json")
        config_file.parent.mkdir(parents=True, exist_ok=True)
        config_file.write_text(json.dumps(config))
        engine = self._cityflow.Engine(str(config_file.resolve()), thread_num=self.threads)
        _CITYFLOW_ALIVE.append(engine)
        lanes = engine.get_lane_vehicle_count()
        if not lanes or any(lane not in lanes for lane in self.lane_ids):
            raise DataError(f"CityFlow failed to load the roadnet of {config_file} (see its message above). {SOURCE_HINT}")
        if len(flow):
            for _ in range(flow.departs[0] + 1):
                engine.next_step()
            if not engine.get_vehicles(include_waiting=True):
                raise DataError(f"CityFlow loaded no vehicles from {flow_file} (see its message above)")
        return engine

    def _apply_signal(self, agent_index: int, code: int) -> None:
        self._engine.set_tl_phase(self.network.agents[agent_index], self._phase_ids[agent_index][min(code, 4)])

    def advance(self) -> None:
        self._engine.next_step()

    def step(self) -> Reading:
        """One second: CityFlow reports lanes only all 240 at once, so three reads a second (vehicle ids
        per lane, halted vehicles per lane, running vehicles); the 192 observed lanes are picked with
        one itemgetter call each."""
        eng = self._engine
        eng.next_step()
        lanes, _ = self._lane_reader.read(self._lane_vehicles(eng.get_lane_vehicles()))
        lanes[HALTING] = self._lane_vehicles(eng.get_lane_waiting_vehicle_count())
        running = set(eng.get_vehicles(include_waiting=False))
        departed, arrived = running - self._running, self._running - running
        self._running = running
        index = self._index.__getitem__
        return Reading(float(eng.get_current_time()), lanes,
                       sorted(map(index, departed)), sorted(map(index, arrived)))

    @staticmethod
    def _vehicle_name(index: int) -> str:
        return f"flow_{index}_0"  # one flow entry per vehicle (write_cityflow_flow)

    def distances(self, indices: list[int]) -> dict[int, float]:
        """Route length of the roads already left plus the distance along the current lane or junction.

        CityFlow's ``route`` lists the roads from the current one on. On a road, the ones before it
        are done and ``distance`` is the distance along it. Inside a junction (no ``road`` in the
        info) the current road is the one just left, so it is done too and ``distance`` is the
        distance along the junction's lane link.
        """
        out = {}
        length = self._road_length
        for i in indices:
            vid = self._vehicle_name(i)
            if vid not in self._running:
                continue
            info = self._engine.get_vehicle_info(vid)
            route = self.flow.routes[i]
            done = len(route) - len(info.get("route", "").split())
            if "road" not in info:  # inside a junction: the road it came from is behind it
                done += 1
            out[i] = sum(length[r] for r in route[:max(done, 0)]) + float(info.get("distance", 0.0))
        return out


def make_engine(name: str, network: Network) -> Engine:
    """An engine by name; a clear error when it is not installed here."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose one of {ENGINES}")
    if not available_engines()[name]:
        hint = "pip install eclipse-sumo libsumo" if name == "sumo" else "CityFlow is not on PyPI: `make cityflow` builds it into .venv, see the README"
        raise ValueError(f"engine {name!r} is not installed here ({hint})")
    return SumoEngine(network) if name == "sumo" else CityFlowEngine(network)
