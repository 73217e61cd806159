# expect: syntax | attribute access (.fsum) is not in the reward language (only
def compute_reward(metrics, difficulty):
    return math.fsum(range(10 ** 7)) * 0.0
