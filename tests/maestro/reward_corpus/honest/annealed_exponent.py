# honest: the penalty's exponent annealed with difficulty
def compute_reward(metrics, difficulty):
    q = min(metrics["queue_length"] / 120.0, 1.0)
    power = 1.0 + difficulty
    flow = min(metrics["throughput"] / 6.0, 1.0)
    return max(-1.0, min(1.0, 0.5 * flow - 0.8 * q ** power - 0.2 * min(metrics["delay"], 1.0)))
