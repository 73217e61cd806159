"""The CityFlow engine (the MAESTRO paper's simulator; optional, not on PyPI: ``make cityflow`` builds it).

See :mod:`.engines` for the interface it implements and the signal codes.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
from itertools import repeat
from operator import itemgetter
from pathlib import Path

import numpy as np

from marlinkit.envs.traffic.context import Flow, write_cityflow_flow
from marlinkit.envs.traffic.data import MOVEMENTS, ROADNET, SOURCE_HINT, DataError, Network
from marlinkit.envs.traffic.engines import HALTING, PHASE_MOVES, Engine, Reading, _generated, axis

#: Every CityFlow Engine made in this process, kept alive to the end (destroying one can hang its threads).
_CITYFLOW_ALIVE: list[object] = []
#: Engines no CityFlowEngine holds now, by (roadnet file, flow key): the next load of that pair reuses one.
_CITYFLOW_IDLE: dict[tuple[str, str], list[object]] = {}
#: How each Engine in ``_CITYFLOW_ALIVE`` steps (:class:`OneCoreSteps`), by ``id`` (Engines live to the end).
_CITYFLOW_STEPS: dict[int, "OneCoreSteps"] = {}
#: How a CityFlowEngine reads its Engine each second (same bytes, tested): "c++" through marlinkit's own
#: module ``marlinkit_cityflow_reads`` (tools/cityflow_reads/cityflow_reads.cpp, which ``make cityflow`` builds
#: beside CityFlow), "python" through CityFlow's Python API (the reference).
READS = ("c++", "python")
#: The fields of the compiled reads' build fingerprint that must equal the installed ``cityflow`` build's.
FINGERPRINT_CHECKED = ("cityflow_version", "cityflow_module_sha256")


class CompiledReadsMismatch(ImportError):
    """marlinkit's compiled CityFlow reads were built beside another ``cityflow`` build than the installed one."""


@functools.lru_cache(maxsize=None)
def _file_sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def installed_cityflow_fingerprint() -> dict[str, str]:
    """The installed ``cityflow`` build as the compiled reads' fingerprint names it: version and module file hash."""
    import cityflow

    return {"cityflow_version": getattr(cityflow, "__version__", "?"),
            "cityflow_module_sha256": _file_sha256(cityflow.__file__)}


def compiled_reads():
    """marlinkit's compiled CityFlow reads (``make cityflow`` builds them), or None where not built.

    The module reads private members of the C++ Engine of the ``cityflow`` build it was made beside, so it
    carries that build's fingerprint (CityFlow version and commit, the SHA-256 of the ``cityflow`` module file,
    and for the record the compiler and pybind11 it was built with). Beside any other build (CityFlow rebuilt
    or reinstalled by other means) it would misread the Engine: it is refused with :class:`CompiledReadsMismatch`,
    naming what differs. ``make cityflow`` rebuilds both; ``CityFlowEngine(reads="python")`` never loads it.
    """
    try:
        import marlinkit_cityflow_reads
    except ImportError:
        return None
    built = getattr(marlinkit_cityflow_reads, "fingerprint", None)
    if not isinstance(built, dict):
        raise CompiledReadsMismatch("marlinkit's compiled CityFlow reads carry no build fingerprint (an older build): "
                                    "refused. Run `make cityflow` to rebuild CityFlow and them together.")
    installed = installed_cityflow_fingerprint()
    differ = [f"{key}: built beside {built.get(key)!r}, installed {installed[key]!r}" for key in FINGERPRINT_CHECKED
              if built.get(key) != installed[key]]
    if differ:
        raise CompiledReadsMismatch(
            f"marlinkit's compiled CityFlow reads (built with compiler {built.get('compiler')}, pybind11 "
            f"{built.get('pybind11')}) were made beside another cityflow build, and are refused: {'; '.join(differ)}. "
            "Run `make cityflow` to rebuild both, or use CityFlowEngine(reads='python').")
    return marlinkit_cityflow_reads


def _thread_ids() -> set[int]:
    """This process's thread ids (Linux; empty elsewhere)."""
    try:
        return {int(tid) for tid in os.listdir("/proc/self/task")}
    except OSError:
        return set()


class OneCoreSteps:
    """Runs a CityFlow Engine's step with its worker thread and the calling thread on one core.

    CityFlow steps by handing work to its worker threads and back, about 11 round trips a
    simulated second through a mutex and condition variable (``Barrier`` in CityFlow's
    ``utility``), each a sleep and a wake-up. With the two threads on different cores every
    wake-up crosses cores, and on an idle machine (in a VM especially) the other core sleeps
    between them: the step then costs about twice the CPU it costs on one core
    (``bench traffic --engine cityflow`` with and without ``taskset -c 0``; numbers in the README).
    So for the step only, the caller is held on the core it runs on and the worker is moved there
    (a system call only when that core changed); the caller's own affinity is restored right after.
    Results do not change: the same work runs, only where. Only for ``thread_num=1`` (more workers
    are meant to run in parallel) on Linux; elsewhere the step runs as it is.
    """

    def __init__(self, workers: set[int]):
        self.workers = sorted(workers)
        self.core = -1
        try:
            self._getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
        except (OSError, AttributeError):
            self.workers = []

    def __call__(self, step) -> None:
        if not self.workers:
            return step()
        core = self._getcpu()
        if core < 0:
            return step()
        try:
            allowed = os.sched_getaffinity(0)
            if core != self.core:
                for tid in self.workers:
                    os.sched_setaffinity(tid, (core,))
                self.core = core
            os.sched_setaffinity(0, (core,))  # 0: the calling thread; last, so a failure leaves it as it was
        except OSError:  # not permitted here (or the thread is gone): step as CityFlow does
            self.workers = []
            return step()
        try:
            step()
        finally:
            os.sched_setaffinity(0, allowed)


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

    def __init__(self, network: Network, threads: int = 1, reads: str | None = None):
        super().__init__(network)
        import cityflow

        self._compiled = compiled_reads() if reads != "python" else None  # a refused build raises here
        self._cityflow = cityflow
        self.version = cityflow_version(cityflow)
        self.threads = threads
        #: "c++" or "python", see READS (None: c++ where built); checked here and at each load()
        self.reads = reads or ("c++" if self._compiled is not None else "python")
        self._check_reads()
        self._fast = None  # this episode's compiled reads (reads == "c++"), see load()
        self.lane_ids = [f"{road}_{MOVEMENTS.index(move)}" for road, move in self.lanes]  # CityFlow lane 0 = left
        self._phase_ids = cityflow_phase_ids(network)
        self._roadnet = str((network.folder / ROADNET).resolve())
        self._engine = None
        self._engine_key: tuple[str, str] | None = None
        self._one_core = OneCoreSteps(set())  # the current engine's, see load()
        self._running: dict[str, float] = {}  # speed of each running vehicle (last second)
        self._observed: itemgetter | None = None  # picks the observed lanes' values from all lanes', see load()
        self._road_length = {road: r.length for road, r in network.roads.items()}

    def load(self, flow: Flow, seed: int) -> None:
        self._check_routes(flow)
        key = (self._roadnet, flow.key)
        if key != self._engine_key:
            self._release()
            idle = _CITYFLOW_IDLE.get(key)
            self._engine = idle.pop() if idle else self._new_engine(flow)
            self._engine_key = key
            self._one_core = _CITYFLOW_STEPS[id(self._engine)]
            # CityFlow returns lane reads as a dict in its own (sorted) lane order, the same every
            # call: the observed lanes are picked by position from the list of its values
            order = {lane: k for k, lane in enumerate(self._engine.get_lane_vehicles())}
            self._observed = itemgetter(*[order[lane] for lane in self.lane_ids])
        self._engine.reset()
        self._engine.set_random_seed(int(seed))
        self._running = {}
        self._start_episode(flow)
        self._check_reads()
        self._fast = self._compiled.LaneReads(self.lane_ids) if self.reads == "c++" else None

    def _check_reads(self) -> None:
        if self.reads not in READS:
            raise ValueError(f"reads={self.reads!r}: one of {READS} (None: c++ where built, else python)")
        if self.reads == "c++" and self._compiled is None:
            raise ImportError("reads='c++' needs marlinkit's compiled CityFlow reads (module "
                              "marlinkit_cityflow_reads), which `make cityflow` builds and installs with CityFlow; "
                              "reads='python' needs nothing")

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
        before = _thread_ids()
        engine = self._cityflow.Engine(str(config_file.resolve()), thread_num=self.threads)
        _CITYFLOW_ALIVE.append(engine)
        workers = _thread_ids() - before
        _CITYFLOW_STEPS[id(engine)] = OneCoreSteps(workers if self.threads == 1 and len(workers) == 1 else set())
        lanes = engine.get_lane_vehicle_count()
        if not lanes or any(lane not in lanes for lane in self.lane_ids):
            raise DataError(f"CityFlow failed to load the roadnet of {config_file} (see its message above). "
                            f"{SOURCE_HINT}")
        if len(flow):
            for _ in range(flow.departs[0] + 1):
                engine.next_step()
            if not engine.get_vehicles(include_waiting=True):
                raise DataError(f"CityFlow loaded no vehicles from {flow_file} (see its message above)")
        return engine

    def _apply_signal(self, agent_index: int, code: int) -> None:
        self._engine.set_tl_phase(self.network.agents[agent_index], self._phase_ids[agent_index][min(code, 4)])

    def advance(self) -> None:
        self._one_core(self._engine.next_step)

    def step(self) -> Reading:
        """One second, two reads: the vehicle ids on every lane and the speed of every running vehicle.

        With ``reads == "c++"`` marlinkit's compiled module makes the same two reads on the C++ Engine
        and the bookkeeping below (and the lane reader's) in C++; same Reading, byte for byte (tested).

        CityFlow reads lanes only all 240 at once; the 192 observed ones are picked by position.
        Halted vehicles per lane (speed < 0.1 m/s, CityFlow's own ``get_lane_waiting_vehicle_count``
        criterion) are counted from the speeds of the halted vehicles and the lane each one is on,
        which the lane reader tracks; the running vehicles (for departures and arrivals) are the
        speeds' keys, as ``get_vehicles()`` would list them. The speed read (~21 us a second, one
        entry per running vehicle) costs half the two it replaces (~36 + 7 us: each CityFlow lane
        read converts a 240-entry dict).
        """
        eng = self._engine
        self._one_core(eng.next_step)
        if self._fast is not None:
            return Reading(*self._fast.read(eng))
        reader = self._lane_reader
        lanes = reader.read(self._observed(list(eng.get_lane_vehicles().values())))
        speeds = eng.get_vehicle_speed()
        halted = [vehicle for vehicle, speed in speeds.items() if speed < 0.1]
        n = len(self.lanes)  # vehicles on no observed lane count in a bin past the last lane
        lane = np.fromiter(map(reader.lane_of.get, halted, repeat(n)), dtype=np.intp, count=len(halted))
        lanes[HALTING] = np.bincount(lane, minlength=n + 1)[:n]
        running, before = speeds.keys(), self._running.keys()
        departed = arrived = ()
        if running != before:  # about half the seconds: vehicles enter or leave the network
            changed = running ^ before
            departed = [vehicle for vehicle in changed if vehicle in speeds]
            arrived = [vehicle for vehicle in changed if vehicle not in speeds]
        self._running = speeds
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
        running = (self._fast.is_running if self._fast is not None
                   else (lambda i: self._vehicle_name(i) in self._running))
        for i in indices:
            if not running(i):
                continue
            vid = self._vehicle_name(i)
            info = self._engine.get_vehicle_info(vid)
            route = self.flow.routes[i]
            done = len(route) - len(info.get("route", "").split())
            if "road" not in info:  # inside a junction: the road it came from is behind it
                done += 1
            out[i] = sum(length[r] for r in route[:max(done, 0)]) + float(info.get("distance", 0.0))
        return out
