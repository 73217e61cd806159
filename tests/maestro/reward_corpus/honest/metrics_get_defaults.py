# honest: metrics.get with defaults everywhere
def compute_reward(metrics, difficulty):
    queue_length = metrics.get("queue_length", 0.0)
    waiting_time = metrics.get("waiting_time", 0.0)
    throughput = metrics.get("throughput", 0.0)
    pressure = metrics.get("pressure", 0.0)
    penalty = 0.005 * queue_length + 0.001 * waiting_time + 0.003 * abs(pressure)
    reward = 0.08 * throughput - penalty
    return float(max(-1.0, min(1.0, reward)))
