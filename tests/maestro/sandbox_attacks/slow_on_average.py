# expect: syntax | a for loop is not in the reward language
def compute_reward(metrics, difficulty):
    total = 0.0
    for i in range(400):
        total += 1e-9
    return -min(metrics['queue_length'] / 60.0, 1.0) - total * 0.0
