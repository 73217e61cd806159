# expect: safety | rises with the queue length
def compute_reward(metrics, difficulty):
    return min(metrics['queue_length'] / 120.0, 1.0)
