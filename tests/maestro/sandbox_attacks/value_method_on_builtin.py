# expect: execution | AttributeError
def compute_reward(metrics, difficulty):
    return max.get(1)
