# expect: syntax | attribute access (.get) is not in the reward language (only
def compute_reward(metrics, difficulty):
    return max.get(1)
