# expect: syntax | assigning to math.e is not in the reward language
def compute_reward(metrics, difficulty):
    math.e = math.e + 1e-9
    return -min(metrics['queue_length'] / 60.0 + (math.e - 2.718281828) * 1e6, 1.0)
