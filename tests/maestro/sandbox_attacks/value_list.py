# expect: syntax | a list is not in the reward language
def compute_reward(metrics, difficulty):
    return [0.0]
