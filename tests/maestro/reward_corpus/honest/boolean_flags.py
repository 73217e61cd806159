# honest: boolean flags multiplied into the terms
def compute_reward(metrics, difficulty):
    queue = metrics["queue_length"]
    congested = queue > 30
    flowing = metrics["throughput"] >= 2
    reward = 0.3 * flowing - 0.4 * congested - queue / 200.0
    return max(-1.0, min(1.0, reward))
