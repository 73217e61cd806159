# honest: delay and occupancy as the congestion signal
def compute_reward(metrics, difficulty):
    delay = metrics["delay"]
    occupancy = metrics["occupancy"]
    flow = min(metrics["throughput"] / 3.0, 1.0)
    congestion = 0.5 * delay + 0.3 * occupancy + 0.2 * min(metrics["queue_length"] / 40.0, 1.0)
    return max(-1.0, min(1.0, 0.5 * flow - congestion))
