# expect: execution | OverflowError: integer above
def compute_reward(metrics, difficulty):
    return pow(3, 10 ** 8) * 0.0
