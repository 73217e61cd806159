# honest: numpy's clip, as some replies write it
import numpy as np


def compute_reward(metrics, difficulty):
    q = metrics["queue_length"] / 100.0
    w = metrics["waiting_time"] / 200.0
    f = metrics["throughput"] / 6.0
    return float(np.clip(0.5 * f - 0.3 * q - 0.2 * w, -1.0, 1.0))
