# honest: a loop over a literal list of names
def compute_reward(metrics, difficulty):
    cost = 0.0
    for name in ["delay", "occupancy"]:
        cost += 0.25 * metrics[name]
    cost += 0.5 * min(metrics["queue_length"] / 50.0, 1.0)
    gain = 0.3 * min(metrics["throughput"] / 4.0, 1.0)
    return max(-1.0, min(1.0, gain - cost))
