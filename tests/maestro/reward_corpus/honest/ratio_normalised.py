# honest: a served-to-waiting ratio with an epsilon in the denominator
def compute_reward(metrics, difficulty):
    served = metrics["throughput"]
    queued = metrics["queue_length"]
    ratio = (served - queued) / (served + queued + 1e-6)
    return max(-1.0, min(1.0, ratio))
