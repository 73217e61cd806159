# honest: max/min over literal lists
def compute_reward(metrics, difficulty):
    worst = max([metrics["queue_length"] / 60.0, metrics["waiting_time"] / 150.0, metrics["delay"]])
    served = min([metrics["throughput"] / 4.0, 1.0])
    return max(-1.0, min(1.0, 0.4 * served - 0.6 * min(worst, 1.0)))
