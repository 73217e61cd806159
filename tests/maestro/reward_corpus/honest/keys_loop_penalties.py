# honest: a loop over the keys, penalising the congestion metrics
def compute_reward(metrics, difficulty):
    penalty = 0.0
    for key in metrics:
        if key in ("queue_length", "waiting_time"):
            scale = 120.0 if key == "queue_length" else 300.0
            penalty += metrics[key] / scale
    reward = 0.4 * min(metrics["throughput"] / 4.0, 1.0) - 0.6 * penalty
    return max(-1.0, min(1.0, reward))
