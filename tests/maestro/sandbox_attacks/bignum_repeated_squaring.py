# expect: execution | OverflowError: integer above
def compute_reward(metrics, difficulty):
    x = 3
    for i in range(40):
        x = x * x
    return x * 0.0
