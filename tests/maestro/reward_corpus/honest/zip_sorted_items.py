# honest: the idiomatic items()/sorted/zip style
NAMES = ("queue_length", "waiting_time", "delay")
WEIGHTS = (0.5, 0.3, 0.2)
SCALES = (60.0, 120.0, 1.0)


def compute_reward(metrics, difficulty):
    penalty = 0.0
    for name, weight, scale in zip(NAMES, WEIGHTS, SCALES):
        penalty += weight * min(metrics[name] / scale, 1.0)
    served = 0.0
    for key, value in sorted(metrics.items()):
        if key == "throughput":
            served = min(value / 4.0, 1.0)
    return max(-1.0, min(1.0, 0.4 * served - penalty))
