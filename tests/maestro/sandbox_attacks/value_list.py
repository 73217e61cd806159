# expect: execution | returned list
def compute_reward(metrics, difficulty):
    return [0.0]
