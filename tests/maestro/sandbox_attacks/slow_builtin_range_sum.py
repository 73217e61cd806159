# expect: syntax | calling 'range' is not in the reward language
def compute_reward(metrics, difficulty):
    return sum(range(10 ** 9)) * 0.0
