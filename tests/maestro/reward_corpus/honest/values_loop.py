# honest: summing selected metrics from a tuple of names, then a ratio
def compute_reward(metrics, difficulty):
    names = ("queue_length", "waiting_time")
    congestion = sum(metrics[n] for n in names)
    return max(-1.0, min(1.0, 0.1 * metrics["throughput"] - congestion / 400.0))
