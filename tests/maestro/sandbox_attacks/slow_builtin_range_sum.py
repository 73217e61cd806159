# expect: syntax | calling 'sum' is not in the reward language (only abs, atan,
def compute_reward(metrics, difficulty):
    return sum(range(10 ** 9)) * 0.0
