# class: verdicts that change between runs | expect: syntax | a for loop
def compute_reward(metrics, difficulty):
    total = 0.0
    for name in {"queue_length", "waiting_time", "delay"}:
        total = total * 0.5 - metrics[name] / 300.0
    return max(-1.0, total)
