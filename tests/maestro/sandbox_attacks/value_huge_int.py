# expect: execution | OverflowError
def compute_reward(metrics, difficulty):
    return 10 ** 400
