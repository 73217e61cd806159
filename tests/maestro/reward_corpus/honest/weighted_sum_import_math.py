# honest: imports math, as most replies do, and squashes with tanh
import math


def compute_reward(metrics, difficulty):
    """Balance throughput against queues; tanh keeps the value in [-1, 1]."""
    q = metrics["queue_length"]
    w = metrics["waiting_time"]
    t = metrics["throughput"]
    score = 0.4 * t - 0.05 * q - 0.01 * w
    return math.tanh(score / 4.0)
