"""MAESTRO's world: traffic-signal control on the real Hangzhou 4x4 network (16 agents).

``TrafficSignalEnv`` (PettingZoo ParallelEnv) over SUMO/libsumo or CityFlow engines, curriculum
contexts, baseline controllers and standard traffic metrics. Modules: ``data`` (finding and
checking the data), ``context`` (contexts and flows), ``engines``, ``env``, ``metrics``,
``controllers``, ``cli``.
"""

from marlinkit.envs.traffic.context import TrafficContext, context_for_difficulty
from marlinkit.envs.traffic.env import RewardWeights, TrafficEnvConfig, TrafficSignalEnv

__all__ = ["TrafficContext", "context_for_difficulty", "RewardWeights", "TrafficEnvConfig", "TrafficSignalEnv"]
