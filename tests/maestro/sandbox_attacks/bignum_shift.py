# expect: syntax | the operator '<<' is not in the reward language
def compute_reward(metrics, difficulty):
    return (1 << 10 ** 10) * 0.0
