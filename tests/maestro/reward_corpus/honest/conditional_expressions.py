# honest: conditional expressions for the bonus and the cap
def compute_reward(metrics, difficulty):
    queue = metrics["queue_length"]
    flow = metrics["throughput"]
    bonus = 0.2 if queue < 3 else 0.0
    flow_term = 0.1 * flow if flow < 5 else 0.5
    penalty = 0.01 * queue if queue < 80 else 0.8
    return max(-1.0, min(1.0, flow_term + bonus - penalty))
