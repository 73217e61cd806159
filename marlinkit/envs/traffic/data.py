"""The Hangzhou 4x4 data: where it is, checking it, and the network topology read from it.

The files are the public CoLight benchmark (Wei et al., CIKM 2019; the same files are in
DaRL-LibSignal/LibSignal). They are never copied into the repository: a folder is named by the
``data_dir`` argument or the ``MARLINKIT_DATA`` environment variable, else looked up as
``<candidate>/hangzhou_4x4`` for each of ``marlinkit.paths.SHARED_DATA_CANDIDATES``
(``data/hangzhou_4x4`` in the repository, then ``../shared/data/hangzhou_4x4``).
``make data`` fills the first from the public origins (see :mod:`.fetch`).

Road ids are ``road_x_y_d``: a road leaving intersection (x, y) heading d (0 east, 1 north,
2 west, 3 south). Lanes are kept in *movement* order left, through, right (CityFlow lane index
0, 1, 2; SUMO lane index 2, 1, 0).
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from marlinkit import paths

ENV_VAR = "MARLINKIT_DATA"
DATASET = "hangzhou_4x4"
ROADNET = "roadnet_4_4.json"
REAL_FLOW = "anon_4_4_hangzhou_real.json"
SUMO_NET = "sumo/hangzhou_4x4_gudang_18041610_1h.net.xml"
REQUIRED = (ROADNET, REAL_FLOW, SUMO_NET)
#: The data set's flows by short name: the real flow and the two held-out days.
FlowName = Literal["real", "real_5816", "real_5734"]
#: Flow files of the data set, by short name.
FLOWS: dict[FlowName, str] = dict(zip(get_args(FlowName), (REAL_FLOW, "anon_4_4_hangzhou_real_5816.json",
                                                             "anon_4_4_hangzhou_real_5734.json")))
SOURCE_HINT = (
    "Run `make data` (python -m marlinkit data fetch) to download the public Hangzhou 4x4 files (CoLight's and "
    "LibSignal's GitHub repositories), pinned by commit and checked by SHA-256, into data/hangzhou_4x4/ (or set "
    f"{ENV_VAR} to a folder holding them, SUMO files under sumo/; see marlinkit/envs/traffic/fetch.py for the origins)."
)

MOVEMENTS = ("left", "through", "right")
#: Approaches of an intersection in observation order: the side a vehicle arrives from.
APPROACHES = ("N", "E", "S", "W")
#: Heading of a road arriving from each side (a vehicle from the north heads south).
_HEADING_FROM = {"N": 3, "E": 2, "S": 1, "W": 0}


class DataError(FileNotFoundError):
    """A missing or malformed data file (the message says where the public files come from)."""


def find_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding the Hangzhou files, checked; raises :class:`DataError` naming the source."""
    if data_dir is None and os.environ.get(ENV_VAR):
        data_dir = os.environ[ENV_VAR]
    candidates = [Path(data_dir)] if data_dir is not None else [root / DATASET for root in paths.SHARED_DATA_CANDIDATES]
    for folder in candidates:
        if folder.is_dir():
            missing = [name for name in REQUIRED if not (folder / name).is_file()]
            if missing:
                raise DataError(f"{folder} lacks {', '.join(missing)}. {SOURCE_HINT}")
            return folder.resolve()
    raise DataError(f"no Hangzhou 4x4 data folder found (looked in {', '.join(map(str, candidates))}). {SOURCE_HINT}")


def _load_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise DataError(f"cannot read {path}: {error}. {SOURCE_HINT}") from error


@dataclass(frozen=True)
class Road:
    id: str
    start: str
    end: str
    heading: int  # 0 east, 1 north, 2 west, 3 south
    length: float  # metres, from the CityFlow geometry
    speed: float  # lane speed limit, m/s


@dataclass(frozen=True)
class Network:
    """Topology of the 16 signalised intersections (the agents) and the roads between them."""

    folder: Path
    roads: dict[str, Road]
    agents: tuple[str, ...]  # real intersections, sorted ``intersection_x_y``
    incoming: dict[str, tuple[str, ...]]  # agent -> incoming road per approach N, E, S, W
    entries: tuple[str, ...]  # roads entering the grid from a boundary node
    turns: dict[tuple[str, str], str]  # (incoming road, movement) -> outgoing road

    @property
    def observed_lanes(self) -> tuple[tuple[str, str], ...]:
        """(road, movement) of the 12 incoming lanes of every agent, agent-major: 16 x 12 = 192."""
        return tuple((road, move) for agent in self.agents for road in self.incoming[agent] for move in MOVEMENTS)

    def side_of_entry(self, road: str) -> str:
        """The side of the grid a boundary entry road comes in from (N, E, S or W)."""
        return next(side for side, heading in _HEADING_FROM.items() if heading == self.roads[road].heading)


def _length(points: list[dict]) -> float:
    return sum(((b["x"] - a["x"]) ** 2 + (b["y"] - a["y"]) ** 2) ** 0.5 for a, b in zip(points, points[1:]))


@functools.lru_cache(maxsize=4)
def load_network(folder: Path) -> Network:
    """Parse and check the CityFlow roadnet (the same ids as the SUMO net)."""
    raw = _load_json(Path(folder) / ROADNET)
    try:
        nodes = {node["id"]: node for node in raw["intersections"]}
        roads = {
            r["id"]: Road(r["id"], r["startIntersection"], r["endIntersection"], int(r["id"].rsplit("_", 1)[1]),
                          _length(r["points"]), float(r["lanes"][0]["maxSpeed"]))
            for r in raw["roads"]
        }
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise DataError(f"{Path(folder) / ROADNET} is not a CityFlow roadnet ({error!r}). {SOURCE_HINT}") from error
    agents = tuple(sorted(i for i, node in nodes.items() if not node["virtual"]))
    incoming, turns = {}, {}
    for agent in agents:
        arriving = {road.heading: road.id for road in roads.values() if road.end == agent}
        leaving = {road.heading: road.id for road in roads.values() if road.start == agent}
        if len(arriving) != 4 or len(leaving) != 4:
            raise DataError(f"{agent} has {len(arriving)} incoming / {len(leaving)} outgoing roads, expected 4. "
                            f"{SOURCE_HINT}")
        incoming[agent] = tuple(arriving[_HEADING_FROM[side]] for side in APPROACHES)
        for heading, road in arriving.items():
            for move, turn in zip(MOVEMENTS, (1, 0, -1)):  # a left turn adds 90 degrees to the heading
                turns[(road, move)] = leaving[(heading + turn) % 4]
    entries = tuple(sorted(r.id for r in roads.values() if nodes[r.start]["virtual"] and not nodes[r.end]["virtual"]))
    if len(agents) != 16 or len(entries) != 16:
        raise DataError(f"expected 16 intersections and 16 entry roads, found {len(agents)} and {len(entries)}. "
                        f"{SOURCE_HINT}")
    return Network(Path(folder), roads, agents, incoming, entries, turns)


def flow_path(folder: Path, name: str) -> Path:
    """Path of a named flow file of the data set (``real``, ``real_5816``, ``real_5734``)."""
    if name not in FLOWS:
        raise ValueError(f"unknown flow {name!r}; choose one of {sorted(FLOWS)}")
    path = Path(folder) / FLOWS[name]
    if not path.is_file():
        raise DataError(f"{path} is missing. {SOURCE_HINT}")
    return path
