# expect: syntax | assigning to math.pi is not in the reward language
def compute_reward(metrics, difficulty):
    math.pi += 1.0
    return -min(metrics['queue_length'] / 60.0, 1.0)
