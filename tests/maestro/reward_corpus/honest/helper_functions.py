# honest: small helper functions
def clamp(x, lo, hi):
    return max(lo, min(hi, x))


def normalise(value, scale):
    return clamp(value / scale, 0.0, 1.0)


def compute_reward(metrics, difficulty):
    queue = normalise(metrics["queue_length"], 60.0)
    wait = normalise(metrics["waiting_time"], 180.0)
    delay = normalise(metrics["delay"], 1.0)
    flow = normalise(metrics["throughput"], 5.0)
    return clamp(0.4 * flow - 0.3 * queue - 0.2 * wait - 0.1 * delay, -1.0, 1.0)
