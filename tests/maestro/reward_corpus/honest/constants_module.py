# honest: module-level constants
MAX_QUEUE = 100.0
MAX_WAIT = 240.0
W_FLOW = 0.35
W_QUEUE = 0.4
W_WAIT = 0.25


def compute_reward(metrics, difficulty):
    q = min(metrics["queue_length"], MAX_QUEUE) / MAX_QUEUE
    w = min(metrics["waiting_time"], MAX_WAIT) / MAX_WAIT
    f = min(metrics["throughput"], 5.0) / 5.0
    return W_FLOW * f - W_QUEUE * q - W_WAIT * w
