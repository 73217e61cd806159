"""Traffic data, contexts, flows, metrics and lane tracking: no simulator needed."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from marlinkit.envs.traffic import data
from marlinkit.envs.traffic.context import (TrafficContext, context_for_difficulty, json_schema, load_flow_file,
                                            write_cityflow_flow, write_sumo_routes)
from marlinkit.envs.traffic.cityflow_engine import cityflow_phase_ids
from marlinkit.envs.traffic.engines import COUNT, INFLOW, OUTFLOW, Reading, _LaneReader
from marlinkit.envs.traffic.metrics import EpisodeMetrics

try:
    FOLDER = data.find_data_dir()
except data.DataError:  # pragma: no cover - the data folder is part of the project's machines
    pytest.skip("Hangzhou data not found", allow_module_level=True)
NET = data.load_network(FOLDER)


def test_missing_data_names_the_public_source(tmp_path, monkeypatch):
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(data.DataError, match="make data.*CoLight"):
        data.find_data_dir()
    (tmp_path / data.ROADNET).write_text("{}")
    with pytest.raises(data.DataError, match="lacks .*anon_4_4_hangzhou_real.json"):
        data.find_data_dir(tmp_path)


def test_malformed_roadnet_is_an_error_not_an_empty_network(tmp_path):
    (tmp_path / "sumo").mkdir()
    for name in data.REQUIRED:
        (tmp_path / name).write_text("[]")
    with pytest.raises(data.DataError, match="not a CityFlow roadnet"):
        data.load_network(tmp_path)


def test_network_topology():
    assert len(NET.agents) == 16 and len(NET.observed_lanes) == 192 and len(NET.entries) == 16
    # road_0_1_0 heads east into intersection_1_1: left goes north, right goes south
    assert NET.turns[("road_0_1_0", "left")] == "road_1_1_1"
    assert NET.turns[("road_0_1_0", "through")] == "road_1_1_0"
    assert NET.turns[("road_0_1_0", "right")] == "road_1_1_3"
    assert NET.incoming["intersection_1_1"] == ("road_1_2_3", "road_2_1_2", "road_1_0_1", "road_0_1_0")
    assert sorted(NET.side_of_entry(r) for r in NET.entries) == sorted("NESW" * 4)


def test_cityflow_phases_found_from_the_movements_they_serve():
    # the data README: phases 1-4 are WT_ET, NT_ST, WL_EL, NL_SL and phase 0 is all-red
    assert cityflow_phase_ids(NET) == [[1, 2, 3, 4, 0]] * 16


@pytest.mark.parametrize("bad, message", [
    ({"route_mix": {"through": 0.5, "left": 0.2, "right": 0.2}}, "sum to 1"),
    ({"approach_rates_vph": {"N": 100, "E": 100, "S": 100}}, "exactly the sides"),
    ({"demand_level": 0}, "demand_level"),
    ({"asymmetry": -0.1}, "asymmetry"),
    ({"vehicle": {"length": 100.0}}, "vehicle.length"),
    ({"time_profile": {"kind": "weekly"}}, "time_profile.kind"),
    ({"rush": True}, "unknown context field"),
])
def test_context_validation(bad, message):
    with pytest.raises(ValueError, match=message):
        TrafficContext.from_dict({**TrafficContext().to_dict(), **bad})


def test_context_roundtrip_schema_and_description():
    ctx = context_for_difficulty(0.7, seed=3)
    assert TrafficContext.from_dict(json.loads(json.dumps(ctx.to_dict()))) == ctx
    assert set(json_schema()["properties"]) == set(ctx.to_dict())
    line = ctx.describe()
    assert "\n" not in line and "seed 3" in line and "EW major axis" in line
    with pytest.raises(ValueError, match="difficulty"):
        context_for_difficulty(1.2)


def test_context_flow_is_seeded_and_routes_are_connected():
    ctx = context_for_difficulty(0.6, seed=1)
    flow = ctx.flow(NET)
    assert flow == ctx.flow(NET) and flow != context_for_difficulty(0.6, seed=2).flow(NET)
    assert list(flow.departs) == sorted(flow.departs) and max(flow.departs) < ctx.duration_s
    for route in flow.routes:
        assert route[0] in NET.entries
        assert all(NET.roads[a].end == NET.roads[b].start for a, b in zip(route, route[1:]))
        assert NET.roads[route[-1]].end not in NET.incoming  # ends leaving the grid


def test_harder_contexts_keep_every_departure_of_easier_ones():
    easy, hard = (context_for_difficulty(d, seed=5).flow(NET) for d in (0.3, 1.0))
    key = lambda f: {(d, r[0]) for d, r in zip(f.departs, f.routes)}  # noqa: E731
    assert key(easy) < key(hard) and len(hard) > 2.5 * len(easy)


def test_real_flow_written_for_both_engines(tmp_path):
    flow = load_flow_file(data.flow_path(FOLDER, "real"))
    assert len(flow) == 2983 and sum(d < 360 for d in flow.departs) == 299
    vehicles = ET.parse(write_sumo_routes(flow, tmp_path / "r.rou.xml")).getroot().findall("vehicle")
    assert [v.get("id") for v in vehicles[:3]] == ["0", "1", "2"]
    assert vehicles[-1].find("route").get("edges").split() == list(flow.routes[-1])
    cityflow = json.loads(write_cityflow_flow(flow, tmp_path / "f.json").read_text())
    assert len(cityflow) == 2983 and cityflow[10]["startTime"] == flow.departs[10]


def test_lane_reader_counts_moves_between_lanes():
    reader = _LaneReader(n_lanes=3)

    def read(on_lane):
        lanes = reader.read(on_lane)
        reading = Reading(0.0, lanes, [], [])
        assert reading.count.tolist() == lanes[COUNT].tolist() == [len(ids) for ids in on_lane]
        # the tracked lane of every vehicle (CityFlow counts halted vehicles per lane with it)
        assert reader.lane_of == {vehicle: j for j, ids in enumerate(on_lane) for vehicle in ids}
        return lanes[INFLOW].tolist(), lanes[OUTFLOW].tolist()

    assert read([("0", "1"), (), ()]) == ([2, 0, 0], [0, 0, 0])
    # vehicle 0 crosses to lane 2, vehicle 1 stays on lane 0, vehicle 3 appears on lane 1
    assert read([("1",), ("3",), ("0",)]) == ([0, 1, 1], [1, 0, 0])
    # vehicle 1 leaves the observed lanes (junction or exit road); an unchanged second moves nothing
    assert read([(), ("3",), ("0",)]) == ([0, 0, 0], [1, 0, 0])
    assert read([(), ("3",), ("0",)]) == ([0, 0, 0], [0, 0, 0])
    # a swap of two vehicles between lanes in one second is one exit and one entry on each
    assert read([(), ("0",), ("3",)]) == ([0, 1, 1], [0, 1, 1])
    # moves to a lane read before the one left (0: lane 1 to 0, 3: lane 2 to 1), then after it
    assert read([("0",), ("3",), ()]) == ([1, 1, 0], [0, 1, 1])
    assert read([(), ("3", "0"), ()]) == ([0, 1, 0], [1, 0, 0])


def test_waiting_to_be_inserted_counts_every_second_until_the_insertion():
    from marlinkit.envs.traffic.context import Flow

    metrics = EpisodeMetrics(Flow(departs=(0, 0, 2), routes=(("road_0_1_0",),) * 3), NET, n_lanes=192)
    metrics.update(1.0, 0.0, departed=[0], arrived=[])  # 1 waits (due since 0)
    metrics.update(2.0, 0.0, departed=[], arrived=[])  # 1 still waits; 2 is not due before 2 s
    metrics.update(3.0, 0.0, departed=[1], arrived=[0])  # 1 inserted; 2 waits
    metrics.update(4.0, 0.0, departed=[1], arrived=[])  # a repeated report changes nothing
    assert metrics.pending_seconds() == 2 + 2  # vehicle 1 at 1 s and 2 s, vehicle 2 at 3 s and 4 s
    assert metrics.running() == [1]


def test_episode_metrics_follow_their_definitions():
    from marlinkit.envs.traffic.context import Flow

    road = "road_0_1_0"  # 800 m
    flow = Flow(departs=(0, 0, 1, 5), routes=((road,),) * 4)
    metrics = EpisodeMetrics(flow, NET, n_lanes=192)
    # t=1: vehicles 0 and 2 inserted, 1 waits; t=2: 1 inserted; t=3: 0 arrives; 3 halted both seconds
    metrics.update(1.0, halting_total=0.0, departed=[0, 2], arrived=[])
    metrics.update(2.0, halting_total=3.0, departed=[1], arrived=[])
    metrics.update(3.0, halting_total=3.0, departed=[], arrived=[0])
    result = metrics.result(distances={1: 20.0, 2: 11.111 * 2})
    assert result["vehicles"] == 3  # vehicle 3 departs at 5 s, after the 3 s episode
    assert result["throughput"] == 1
    assert result["avg_travel_time_s"] == pytest.approx((3 + 3 + 2) / 3)
    free = [800 / 11.111, 20 / 11.111, 2.0]  # finished: whole route; running: odometer
    assert result["avg_delay_s"] == pytest.approx(np.mean(np.maximum(np.array([3, 3, 2]) - free, 0)))
    assert result["avg_wait_s"] == pytest.approx((6 + 1) / 3)  # halted + 1 s waiting to be inserted
    assert result["avg_queue"] == pytest.approx(2.0)
