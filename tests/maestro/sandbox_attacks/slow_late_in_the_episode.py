# expect: syntax | a for loop is not in the reward language
def compute_reward(metrics, difficulty):
    if difficulty > 0.95:
        for i in range(100000):
            pass
    return -min(metrics['queue_length'] / 60.0, 1.0)
