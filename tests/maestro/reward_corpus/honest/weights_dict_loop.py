# honest: a dict of weights and a loop over it
WEIGHTS = {"throughput": 0.12, "queue_length": -0.006, "waiting_time": -0.0015, "delay": -0.2}


def compute_reward(metrics, difficulty):
    total = 0.0
    for key, weight in WEIGHTS.items():
        total += weight * metrics[key]
    return max(-1.0, min(1.0, total))
