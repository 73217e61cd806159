# expect: execution | a call used more than
def compute_reward(metrics, difficulty):
    total = 0.0
    for i in range(20000):
        total += i * 1e-12
    return -min(metrics['queue_length'] / 60.0, 1.0) + total * 0.0
