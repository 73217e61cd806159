# honest: a weighted sum of normalised terms
def compute_reward(metrics, difficulty):
    queue = metrics["queue_length"] / 120.0
    wait = metrics["waiting_time"] / 300.0
    flow = metrics["throughput"] / 6.0
    reward = 0.5 * flow - 0.3 * queue - 0.2 * wait
    return max(-1.0, min(1.0, reward))
