# honest: sum() over a generator of weighted metrics
def compute_reward(metrics, difficulty):
    weights = {"queue_length": -0.005, "waiting_time": -0.002, "throughput": 0.1}
    raw = sum(weights[k] * metrics[k] for k in weights)
    return max(-1.0, min(1.0, raw))
