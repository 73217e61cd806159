# honest: type hints and a typing import
from typing import Dict


def compute_reward(metrics: Dict[str, float], difficulty: float) -> float:
    """Reward throughput, penalise queue and waiting, clipped to [-1, 1]."""
    queue: float = metrics["queue_length"]
    waiting: float = metrics["waiting_time"]
    throughput: float = metrics["throughput"]
    reward: float = 0.1 * throughput - 0.006 * queue - 0.002 * waiting
    return max(-1.0, min(1.0, reward))
