# honest: piecewise penalty by queue band
def compute_reward(metrics, difficulty):
    queue = metrics["queue_length"]
    if queue < 5:
        queue_term = 0.0
    elif queue < 20:
        queue_term = -0.2 - 0.01 * (queue - 5)
    elif queue < 50:
        queue_term = -0.35 - 0.01 * (queue - 20)
    else:
        queue_term = -0.65 - 0.005 * (queue - 50)
    flow_term = 0.05 * metrics["throughput"]
    return max(-1.0, min(1.0, queue_term + flow_term))
