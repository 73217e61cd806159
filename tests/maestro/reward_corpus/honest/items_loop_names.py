# honest: a loop over metrics.items() comparing names (rewritten to metrics["name"])
def compute_reward(metrics, difficulty):
    reward = 0.0
    for name, value in metrics.items():
        if name == "queue_length":
            reward -= 0.004 * value
        elif name == "waiting_time":
            reward -= 0.001 * value
        elif name == "throughput":
            reward += 0.1 * value
    return max(-1.0, min(1.0, reward))
