# honest: pressure balance with the queue
def compute_reward(metrics, difficulty):
    pressure = abs(metrics["pressure"])
    queue = metrics["queue_length"]
    served = metrics["throughput"]
    reward = 0.08 * served - 0.004 * pressure - 0.006 * queue
    reward -= 0.1 * difficulty * min(queue / 50.0, 1.0)
    return max(-1.0, min(1.0, reward))
