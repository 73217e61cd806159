# honest: square-root penalty on the queue
import math


def compute_reward(metrics, difficulty):
    queue_penalty = math.sqrt(metrics["queue_length"]) / math.sqrt(120.0)
    wait_penalty = math.sqrt(metrics["waiting_time"] / 300.0)
    return max(-1.0, min(1.0, 0.15 * metrics["throughput"] - 0.5 * queue_penalty - 0.3 * wait_penalty))
