# expect: syntax | calling 'list' is not in the reward language
def compute_reward(metrics, difficulty):
    return sorted(list(range(100000)))[0] * 0.0
