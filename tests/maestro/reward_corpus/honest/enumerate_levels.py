# honest: enumerate over queue thresholds for a banded penalty
THRESHOLDS = (5.0, 15.0, 30.0, 60.0)


def compute_reward(metrics, difficulty):
    queue = metrics["queue_length"]
    penalty = 0.0
    for i, level in enumerate(THRESHOLDS):
        if queue > level:
            penalty += 0.1 * (i + 1)
    flow = min(metrics["throughput"] / 4.0, 1.0)
    return max(-1.0, min(1.0, 0.3 * flow - penalty - 0.002 * queue))
