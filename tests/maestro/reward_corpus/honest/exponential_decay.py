# honest: exponential decay of the queue and wait
import math


def compute_reward(metrics, difficulty):
    queue_score = math.exp(-metrics["queue_length"] / 20.0)
    wait_score = math.exp(-metrics["waiting_time"] / 60.0)
    flow_score = 1.0 - math.exp(-metrics["throughput"])
    value = 0.4 * queue_score + 0.3 * wait_score + 0.3 * flow_score
    return 2.0 * value - 1.0
