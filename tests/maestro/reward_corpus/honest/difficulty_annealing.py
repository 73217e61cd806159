# honest: weights annealed with the curriculum difficulty
def compute_reward(metrics, difficulty):
    alpha = 0.5 - 0.3 * difficulty   # throughput matters less as traffic grows
    beta = 0.2 + 0.4 * difficulty    # queues matter more
    gamma = 0.1 + 0.2 * difficulty   # so does waiting
    q = min(metrics["queue_length"] / 60.0, 1.0)
    w = min(metrics["waiting_time"] / 120.0, 1.0)
    f = min(metrics["throughput"] / 4.0, 1.0)
    return max(-1.0, min(1.0, alpha * f - beta * q - gamma * w))
