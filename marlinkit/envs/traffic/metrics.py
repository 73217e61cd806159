"""Per-episode traffic metrics, computed the same way for every engine from its per-second readings.

Definitions (T = simulated seconds of the episode; the *population* is every vehicle of the flow
scheduled to depart before T, whether or not it could enter the network yet):

* ``throughput``: vehicles that reached the end of their route within the episode.
* ``avg_travel_time_s``: mean over the population of (arrival time, or T if unfinished) minus the
  *scheduled* departure time, so time spent waiting to enter counts, and unfinished vehicles count
  up to the episode end (the convention of CityFlow's ``get_average_travel_time``). The arrival
  time is the time of the reading that reports the vehicle gone: the end of the second in which it
  left. CityFlow's own function takes the start of that second, so on CityFlow this value is
  exactly ``throughput / vehicles`` seconds above ``get_average_travel_time`` (1 s per finished
  vehicle: 0.85 s on the real flow over 3600 s fixed-time, 507.09 s against 506.24 s; checked in
  ``tests/envs/test_traffic_cityflow.py``). SUMO's tripinfo arrival is the end of the second, as here.
* ``avg_delay_s``: mean over the population of travel time minus the free-flow time of the
  distance covered (distance / the vehicles' maximum speed). Finished vehicles covered their
  route (sum of road lengths, junction interiors left out); vehicles still driving report their
  odometer; vehicles not yet inserted covered nothing, so all their time is delay.
  ``total_delay_h`` is the same delay summed over the population, in vehicle-hours.
* ``avg_wait_s``: vehicle-seconds spent halted (speed < 0.1 m/s) on the 192 observed incoming
  lanes plus vehicle-seconds waiting to be inserted, divided by the population.
* ``avg_queue``: mean over seconds of the halted vehicles summed over the 192 observed lanes
  (the measured reference run's "mean queue (veh on 192 lanes)", documentation: Sources and measured facts);
  ``avg_queue_per_lane`` divides by 192.
"""

from __future__ import annotations

import numpy as np

from marlinkit.envs.traffic.context import Flow
from marlinkit.envs.traffic.data import Network


class EpisodeMetrics:
    """Accumulates one episode's readings; :meth:`result` gives the metrics defined above."""

    def __init__(self, flow: Flow, network: Network, n_lanes: int):
        self.flow = flow
        self.n_lanes = n_lanes
        self.departs = np.asarray(flow.departs, dtype=float)
        self.route_length = np.array([sum(network.roads[r].length for r in route) for route in flow.routes])
        self.arrival = np.full(len(flow), np.nan)
        self.inserted = np.full(len(flow), np.inf)  # time of the reading that first reported each vehicle inserted
        self.times: list[float] = []  # time of every reading
        self.halted_seconds = 0.0  # vehicle-seconds halted on observed lanes
        self.seconds = 0

    def update(self, time: float, halting_total: float, departed: list[int], arrived: list[int]) -> None:
        """Record one reading (called every second: only appends; the sums are taken in :meth:`result`)."""
        self.seconds += 1
        self.halted_seconds += halting_total
        self.times.append(time)
        if departed:
            self.inserted[departed] = np.minimum(self.inserted[departed], time)
        if arrived:
            self.arrival[arrived] = time

    def running(self) -> list[int]:
        """Flow indices of vehicles inserted and not finished (for the distance query at the end)."""
        return np.flatnonzero(np.isfinite(self.inserted) & np.isnan(self.arrival)).tolist()

    def pending_seconds(self) -> float:
        """Vehicle-seconds waiting to be inserted: at each reading, the vehicles due by then (scheduled
        departure < its time) and not yet inserted; per vehicle, the readings after its scheduled
        departure and before the one reporting it inserted."""
        times = np.asarray(self.times)
        due_from = np.searchsorted(times, self.departs, side="right")
        inserted_from = np.searchsorted(times, self.inserted, side="left")
        return float(np.maximum(inserted_from - due_from, 0).sum())

    def result(self, distances: dict[int, float]) -> dict[str, float]:
        """The episode's metrics; ``distances`` holds the odometer of the running vehicles."""
        end = float(self.seconds)
        population = self.departs < end
        n = int(population.sum())
        finished = ~np.isnan(self.arrival)
        travel = np.where(finished, self.arrival, end)[population] - self.departs[population]
        covered = np.where(finished, self.route_length, 0.0)
        for i, metres in distances.items():
            covered[i] = metres
        free_time = covered[population] / self.flow.vehicle.max_speed
        safe = max(n, 1)
        delay = np.maximum(travel - free_time, 0.0)
        return {
            "throughput": int(finished.sum()),
            "avg_travel_time_s": float(travel.mean()) if n else 0.0,
            "avg_delay_s": float(delay.mean()) if n else 0.0,
            "total_delay_h": float(delay.sum()) / 3600.0,
            "avg_wait_s": (self.halted_seconds + self.pending_seconds()) / safe,
            "avg_queue": self.halted_seconds / max(self.seconds, 1),
            "avg_queue_per_lane": self.halted_seconds / max(self.seconds, 1) / self.n_lanes,
            "vehicles": n,
            "seconds": self.seconds,
        }
