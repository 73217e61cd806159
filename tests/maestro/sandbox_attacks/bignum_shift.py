# expect: execution | OverflowError: integer above
def compute_reward(metrics, difficulty):
    return (1 << 10 ** 10) * 0.0
