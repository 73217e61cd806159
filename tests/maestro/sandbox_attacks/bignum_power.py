# expect: execution | OverflowError: integer above
def compute_reward(metrics, difficulty):
    return 2 ** (10 ** 10)
