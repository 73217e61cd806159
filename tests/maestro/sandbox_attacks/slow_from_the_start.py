# expect: syntax | a for loop is not in the reward language
def compute_reward(metrics, difficulty):
    total = 0.0
    for i in range(20000):
        total += i * 1e-12
    return -min(metrics['queue_length'] / 60.0, 1.0) + total * 0.0
