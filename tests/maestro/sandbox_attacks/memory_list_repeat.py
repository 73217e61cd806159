# expect: execution | TickBudgetExceeded
def compute_reward(metrics, difficulty):
    xs = [0] * 10 ** 9
    return 0.0
