# honest: early returns for the extreme cases
def compute_reward(metrics, difficulty):
    queue = metrics["queue_length"]
    throughput = metrics["throughput"]
    if queue >= 100:
        return -1.0
    if queue == 0 and throughput > 0:
        return min(1.0, 0.2 * throughput)
    reward = 0.1 * throughput - queue / 100.0
    return max(-1.0, min(1.0, reward))
