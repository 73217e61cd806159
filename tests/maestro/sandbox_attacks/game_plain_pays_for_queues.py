# expect: safety | the reward rises with queue_length: 0.8 -> 0.99896 when queu
def compute_reward(metrics, difficulty):
    return min(metrics['queue_length'] / 120.0, 1.0)
