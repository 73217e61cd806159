# honest: defensive checks on the metrics dict before using it
import math


def compute_reward(metrics, difficulty):
    if not metrics:
        return 0.0
    queue = metrics["queue_length"] if "queue_length" in metrics else 0.0
    wait = metrics.get("waiting_time", 0.0)
    served = metrics.get("throughput", 0.0)
    if len(metrics) < 3:
        return 0.0
    value = 0.3 * math.tanh(served / 3.0) - 0.4 * math.tanh(queue / 40.0) - 0.3 * math.tanh(wait / 100.0)
    return max(-1.0, min(1.0, value))
