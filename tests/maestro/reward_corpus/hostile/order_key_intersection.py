# class: verdicts that change between runs | expect: syntax | a dict is not in the reward language
WEIGHTS = {"queue_length": -0.004, "waiting_time": -0.001, "throughput": 0.1}


def compute_reward(metrics, difficulty):
    total = 0.0
    for key in metrics.keys() & WEIGHTS.keys():
        total += WEIGHTS[key] * metrics[key]
    return max(-1.0, min(1.0, total))
