"""Traffic-signal control on the real Hangzhou 4x4 network (MAESTRO Section 3.2) as a PettingZoo ParallelEnv.

=================  ==========================================================================
Agents             16, one per signalised intersection: ``intersection_1_1`` ... ``intersection_4_4``
Action space       ``Discrete(4)``: WT_ET, NT_ST, WL_EL, NL_SL (right turns always green), chosen each second
Observation space  ``Box(0, 1, (198,), float32)`` with the default history of 3 (layout below)
Episode            ``episode_seconds`` steps of 1 s (360 by default); truncation only
Engines            SUMO via libsumo (default) or CityFlow, see :mod:`.engines`
=================  ==========================================================================

Observation of one agent, every value clipped to [0, 1]. Lanes are its 12 incoming lanes in the
order approach N, E, S, W x movement left, through, right; each lane has 4 features:

1. ``queue``: halted vehicles (speed < 0.1 m/s) / lane capacity (length / (vehicle length + gap));
2. ``occupancy``: vehicles on the lane x (vehicle length + gap) / lane length (space occupancy);
3. ``inflow``: vehicles that entered the lane per second over the last ``rate_window_s`` seconds;
4. ``outflow``: vehicles that left the lane (crossed the stop line) per second, same window
   (1 vehicle/s is above a lane's saturation flow, so rates are already in [0, 1]).

``[0:48]`` the 12 x 4 lane features now, ``[48:48 + 48 * history]`` the same features
``history_stride_s``, 2 x ``history_stride_s``, ... seconds ago (zeros before the episode start),
then the current phase one-hot (4), the elapsed time in the phase / 60 s, and 1 during a
change interval (yellow) else 0.

Signal rules: a request for another phase is honoured once the current phase has been green for
``min_green_s``; the change then passes through ``yellow_s`` seconds of yellow (0 = switch at
once), during which actions are ignored.

Reward (the paper's template "flow + wait + pressure", weights in :class:`RewardWeights`):
``r_i = flow * outflow_i - wait * queue_i - pressure * |pressure_i|`` each second, where
``outflow_i`` is the vehicles that left i's incoming lanes this second, ``queue_i`` its halted
vehicles and ``pressure_i`` the vehicles on its incoming lanes minus those on its outgoing lanes
(roads leaving the grid count as empty). ``infos[agent]`` holds the three terms (``outflow``,
``queue``, ``pressure``) each step, also in ``env.reward_terms`` as arrays over agents, and on
the last step the episode's ``metrics`` (see :mod:`.metrics`).

Seeds: on SUMO the episode seed seeds the simulation (vehicle insertion and driver imperfection).
CityFlow has nothing random to seed here (fixed routes, no lane changing): on it the seed changes
nothing, and only the traffic (the flow, or a curriculum context's seed) varies episodes.

Deviations from the paper: the paper used CityFlow; SUMO is the default here (CityFlow is not on
PyPI; ``make cityflow`` builds it) and numbers differ between engines. The paper's appendix with exact features and
reward weights is not public; the features above follow its list and the weights are ours.

libsumo runs one simulation per process, so two SUMO environments cannot be open at once in
one process; PettingZoo's ``parallel_seed_test`` (two live copies) cannot run in-process and the
tests check seeding by replaying one environment instead.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from marlinkit.envs.traffic.context import Flow, TrafficContext, load_flow_file, truncate
from marlinkit.config_fields import check_choices
from marlinkit.envs.traffic.data import MOVEMENTS, FlowName, Network, find_data_dir, flow_path, load_network
from marlinkit.envs.traffic.engines import (ENGINES, HALTING, OUTFLOW, PHASE_MOVES, PHASES, Engine, EngineName, Reading,
                                           SumoEngine, available_engines, axis)
from marlinkit.envs.traffic.metrics import EpisodeMetrics

ELAPSED_SCALE_S = 60.0
#: Elapsed seconds past which the elapsed-time feature is 1 anyway (twice the scale: safely past 1).
ELAPSED_CAP_S = int(2 * ELAPSED_SCALE_S)
REWARD_TERMS = ("outflow", "queue", "pressure")


def make_engine(name: str, network: Network) -> Engine:
    """An engine by name (``engines.ENGINES``); a clear error when it is not installed here. CityFlow's module is
    imported only when it is asked for (it loads the optional ``cityflow`` build)."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; choose one of {ENGINES}")
    if not available_engines()[name]:
        hint = ("pip install eclipse-sumo libsumo" if name == "sumo"
                else "CityFlow is not on PyPI: `make cityflow` builds it into .venv, see the README")
        raise ValueError(f"engine {name!r} is not installed here ({hint})")
    if name == "sumo":
        return SumoEngine(network)
    from marlinkit.envs.traffic.cityflow_engine import CityFlowEngine

    return CityFlowEngine(network)


def _signal_table() -> np.ndarray:
    """The 6 signal features of every (phase, elapsed seconds up to the cap, changing), one row each
    (row ``(phase * (cap + 1) + elapsed) * 2 + changing``): a lookup per agent instead of arithmetic
    every second. Computed in float32 like the observation, so values are the same as computing them."""
    phase, elapsed, changing = (a.ravel() for a in np.meshgrid(np.arange(4), np.arange(ELAPSED_CAP_S + 1), np.arange(2),
                                                               indexing="ij"))
    table = np.zeros((phase.size, 6), dtype=np.float32)
    table[np.arange(phase.size), phase] = 1.0
    table[:, 4] = elapsed
    table[:, 4] *= 1.0 / ELAPSED_SCALE_S
    np.minimum(table[:, 4], 1.0, out=table[:, 4])
    table[:, 5] = changing
    return table


@dataclass(frozen=True)
class RewardWeights:
    """Weights of the template reward (one place; per second, per intersection)."""

    flow: float = 1.0  #: per vehicle served (left an incoming lane)
    wait: float = 0.1  #: per halted vehicle on the incoming lanes (10 s of waiting cost one served vehicle)
    pressure: float = 0.05  #: per vehicle of |incoming - outgoing| imbalance


@dataclass(frozen=True)
class TrafficEnvConfig:
    """Settings of one traffic environment."""

    engine: EngineName = "sumo"  #: "sumo" (libsumo) or "cityflow"
    data_dir: str | None = None  #: Hangzhou folder; None: MARLINKIT_DATA, then the default folders
    flow: FlowName = "real"  #: data-set flow used when no context is given ("real", "real_5816", "real_5734")
    context: TrafficContext | None = None  #: curriculum context; overrides ``flow``
    episode_seconds: int = 360  #: steps of 1 s per episode
    yellow_s: int = 3  #: change interval between two phases (0: switch at once)
    min_green_s: int = 5  #: green time before another phase may be requested
    history: int = 3  #: past snapshots of the lane features in the observation
    history_stride_s: int = 5  #: seconds between those snapshots
    rate_window_s: int = 5  #: seconds over which inflow/outflow rates are averaged
    reward: RewardWeights = field(default_factory=RewardWeights)
    #: seed of the first reset when reset() gets none (SUMO only: CityFlow is deterministic, see .engines)
    seed: int = 0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the offending field; called on construction."""
        check_choices(self)
        for name in ("episode_seconds", "rate_window_s", "history_stride_s"):
            if not (isinstance(getattr(self, name), int) and getattr(self, name) >= 1):
                raise ValueError(f"{name} must be an int >= 1, got {getattr(self, name)!r}")
        for name in ("yellow_s", "min_green_s", "history"):
            if not (isinstance(getattr(self, name), int) and 0 <= getattr(self, name) <= 600):
                raise ValueError(f"{name} must be an int in [0, 600], got {getattr(self, name)!r}")


class TrafficSignalEnv(ParallelEnv):
    """16 signal agents on the Hangzhou network; see the module docstring for spaces and reward."""

    metadata = {"name": "hangzhou_tsc_v0", "render_modes": []}

    def __init__(self, config: TrafficEnvConfig | None = None, **overrides):
        config = config or TrafficEnvConfig()
        if overrides:
            config = TrafficEnvConfig(**{**config.__dict__, **overrides})  # checked when built
        self.config = config
        self.network = load_network(find_data_dir(config.data_dir))
        self.possible_agents = list(self.network.agents)
        self.agents: list[str] = []
        self.engine = make_engine(config.engine, self.network)
        self._context = config.context
        self._flow = self._make_flow(config.context)
        self._build_indices()
        n = len(self.possible_agents)
        self.obs_size = 48 * (1 + config.history) + 6
        self._rng = np.random.default_rng(config.seed)
        self.last_metrics: dict | None = None
        self.last_reading: Reading | None = None
        self._phase = [0] * n
        self.episode_seed = config.seed

    # ----- spaces (cached: the same object every call) -----
    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (self.obs_size,), np.float32)

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(len(PHASES))

    # ----- set-up -----
    def _make_flow(self, context: TrafficContext | None) -> Flow:
        if context is not None:
            return context.flow(self.network)
        return truncate(load_flow_file(flow_path(self.network.folder, self.config.flow)), self.config.episode_seconds)

    @property
    def flow(self) -> Flow:
        return self._flow

    @property
    def context(self) -> TrafficContext | None:
        return self._context

    def _build_indices(self) -> None:
        net, lanes = self.network, self.network.observed_lanes
        position = {lane: j for j, lane in enumerate(lanes)}
        self._lane_lengths = np.array([net.roads[road].length for road, _ in lanes])
        n = len(self.possible_agents)
        # lanes x agents: 1 where a lane is one of the agent's outgoing lanes (roads leaving the grid
        # have no lanes here: counted as empty); incoming lanes need none, lanes are agent-major
        self._outgoing = np.zeros((len(lanes), n))
        # per agent and phase: the 2 served incoming lanes, and the 2 x 3 lanes of their target roads
        self._phase_in = np.zeros((n, 4, 2), dtype=np.int64)
        self._phase_out = np.full((n, 4, 6), -1, dtype=np.int64)
        for i, agent in enumerate(self.possible_agents):
            outgoing = sorted({net.turns[(road, m)] for road in net.incoming[agent] for m in MOVEMENTS})
            for lane in ((road, move) for road in outgoing for move in MOVEMENTS):
                if lane in position:
                    self._outgoing[position[lane], i] = 1.0
            for k, (phase_axis, move) in enumerate(PHASE_MOVES):
                roads = [road for road in net.incoming[agent] if axis(net.roads[road].heading) == phase_axis]
                self._phase_in[i, k] = [position[(road, move)] for road in roads]
                self._phase_out[i, k] = [position.get((net.turns[(road, move)], m), -1) for road in roads
                                         for m in MOVEMENTS]
        self._signal_table = _signal_table()

    # ----- PettingZoo API -----
    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode. ``options={"context": TrafficContext | dict}`` switches the traffic."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        if options and "context" in options:
            context = options["context"]
            context = TrafficContext.from_dict(context) if isinstance(context, dict) else context
            if context != self._context:
                self._context, self._flow = context, self._make_flow(context)
        self.episode_seed = int(self._rng.integers(0, 2**31 - 1))
        vehicle = self._flow.vehicle
        # 1 / lane capacity; occupancy per vehicle
        self._per_vehicle = (vehicle.length + vehicle.min_gap) / self._lane_lengths
        self.engine.load(self._flow, self.episode_seed)
        cfg, n = self.config, len(self.possible_agents)
        self.agents = list(self.possible_agents)
        self._t = 0
        self._phase, self._elapsed, self._change_left, self._target = [0] * n, [0] * n, [0] * n, [0] * n
        # the last history_stride_s observations (zeros before the start): their lane features are the history
        self._obs_ring = np.zeros((cfg.history_stride_s, n, self.obs_size), dtype=np.float32)
        self._flow_ring = np.zeros((cfg.rate_window_s, 2, 192))  # the last rate_window_s seconds' flows
        self._flow_sum = np.zeros((2, 192))  # and their sum
        self._features = np.zeros((4, 192))  # lane features, one row each (see _observe)
        self.reward_terms = {key: np.zeros(n) for key in REWARD_TERMS}
        self._metrics = EpisodeMetrics(self._flow, self.network, 192)
        self.last_metrics = None
        self.last_reading = None
        observations = self._observe(Reading(0.0, np.zeros((4, 192)), [], []), [0] * n)  # row 0: phase 0, 0 s, green
        return observations, {agent: {} for agent in self.agents}

    def step(self, actions: dict):
        cfg = self.config
        phase, elapsed, change_left, target = self._phase, self._elapsed, self._change_left, self._target
        yellow_s, min_green_s = cfg.yellow_s, cfg.min_green_s
        codes, rows = [], []  # signal codes now; rows of the signal-feature table after this second
        # 16 agents: plain Python is fastest
        for i, action in enumerate(map(actions.__getitem__, self.possible_agents)):
            if not 0 <= action < 4:
                raise ValueError(f"actions must be in 0..3, got {action!r} for {self.possible_agents[i]}")
            if change_left[i] == 0 and action != phase[i] and elapsed[i] >= min_green_s:
                if yellow_s > 0:
                    change_left[i], target[i] = yellow_s, int(action)
                else:
                    phase[i], elapsed[i] = int(action), 0
            if change_left[i]:  # this second is yellow; the new phase's green starts after it
                codes.append(4 + phase[i])
                change_left[i] -= 1
                if change_left[i] == 0:
                    phase[i], elapsed[i] = target[i], 0
            else:
                codes.append(phase[i])
                elapsed[i] += 1
            e = elapsed[i]
            # FURB136 below: no call, 3x faster than min
            rows.append((phase[i] * (ELAPSED_CAP_S + 1)
                         + (e if e < ELAPSED_CAP_S else ELAPSED_CAP_S)) * 2  # noqa: FURB136
                        + (change_left[i] > 0))
        self.engine.set_signals(codes)
        reading = self.engine.step()
        self.last_reading = reading
        self._t += 1
        self._metrics.update(reading.time, float(reading.halting.sum()), reading.departed, reading.arrived)

        observations = self._observe(reading, rows)
        terms = self._reward_terms(reading)
        self.reward_terms = dict(zip(REWARD_TERMS, terms))
        w = cfg.reward
        rewards, infos = {}, {}
        for agent, outflow, queue, pressure in zip(self.possible_agents, *terms.tolist()):
            rewards[agent] = w.flow * outflow - w.wait * queue - w.pressure * abs(pressure)
            infos[agent] = {"outflow": outflow, "queue": queue, "pressure": pressure}
        truncated = self._t >= cfg.episode_seconds
        if truncated:
            self.last_metrics = self._metrics.result(self.engine.distances(self._metrics.running()))
            for info in infos.values():
                info["metrics"] = self.last_metrics
            self.agents = []
        terminations = dict.fromkeys(self.possible_agents, False)
        truncations = dict.fromkeys(self.possible_agents, truncated)
        return observations, rewards, terminations, truncations, infos

    def close(self) -> None:
        self.engine.close()

    # ----- observation and reward -----
    def _observe(self, reading: Reading, signal_rows: list[int]) -> dict[str, np.ndarray]:
        """All agents' observations as one (agents, obs_size) array, returned as a dict of its rows.

        Lane features are computed as 4 rows over the 192 lanes (contiguous, cheap) and written
        into the agent-major layout with one transposing copy. ``signal_rows``: each agent's row
        of the signal-feature table (phase, elapsed time, changing), from :meth:`step`'s loop.
        """
        cfg, n, t = self.config, len(self.possible_agents), self._t
        slot = t % cfg.rate_window_s
        self._flow_sum += reading.flows  # whole numbers: the running sum is exact
        self._flow_sum -= self._flow_ring[slot]
        self._flow_ring[slot] = reading.flows
        features = self._features  # queue, occupancy, inflow rate, outflow rate
        np.multiply(reading.lanes[HALTING:], self._per_vehicle, out=features[:2])  # halting, count
        np.multiply(self._flow_sum, 1.0 / cfg.rate_window_s, out=features[2:])
        np.minimum(features, 1.0, out=features)  # every feature is >= 0
        obs = np.empty((n, self.obs_size), dtype=np.float32)
        obs[:, :48].reshape(n, 12, 4)[:] = features.reshape(4, n, 12).transpose(1, 2, 0)
        # the observation one stride back starts with the features then, then those 2, 3, ... strides back
        one_stride_back = self._obs_ring[t % cfg.history_stride_s]
        obs[:, 48:48 * (1 + cfg.history)] = one_stride_back[:, :48 * cfg.history]
        obs[:, -6:] = self._signal_table.take(signal_rows, axis=0)
        one_stride_back[:] = obs  # a copy: callers may change the arrays they get
        return dict(zip(self.possible_agents, obs))

    def _reward_terms(self, reading: Reading) -> np.ndarray:
        """(3, agents): the REWARD_TERMS. Lanes are agent-major, so sums over each agent's 12
        incoming lanes are one reshape; the pressure subtracts the outgoing lanes' vehicles."""
        terms = reading.lanes[OUTFLOW:].reshape(3, len(self.possible_agents), 12).sum(axis=2)  # outflow, halting, count
        terms[2] -= reading.count @ self._outgoing
        return terms

    def phase_pressures(self) -> np.ndarray:
        """(agents, 4) max-pressure of each phase: vehicles on its served lanes minus the mean per
        lane on their target roads, from the last second's reading."""
        if self.last_reading is None:
            return np.zeros((len(self.possible_agents), 4))
        padded = np.append(self.last_reading.count, 0.0)
        return padded[self._phase_in].sum(axis=2) - padded[self._phase_out].sum(axis=2) / 3.0

    @property
    def current_phases(self) -> np.ndarray:
        return np.array(self._phase)

    @property
    def time(self) -> int:
        return self._t
