# honest: a quadratic penalty that grows faster for long queues
def compute_reward(metrics, difficulty):
    q = min(metrics["queue_length"] / 120.0, 1.0)
    w = min(metrics["waiting_time"] / 300.0, 1.0)
    flow = min(metrics["throughput"] / 6.0, 1.0)
    return max(-1.0, min(1.0, 0.4 * flow - 0.5 * q ** 2 - 0.3 * w ** 2 - 0.1 * q))
