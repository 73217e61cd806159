# expect: syntax | a list is not in the reward language
def compute_reward(metrics, difficulty):
    return float(1 in [1] in [[1]])
