# honest: logarithmic penalties (diminishing for long queues)
from math import log, log1p


def compute_reward(metrics, difficulty):
    queue_pen = log1p(metrics["queue_length"]) / log(121.0)
    wait_pen = log1p(metrics["waiting_time"]) / log(301.0)
    served = metrics["throughput"] / 6.0
    return max(-1.0, min(1.0, 0.5 * served - 0.3 * queue_pen - 0.2 * wait_pen))
