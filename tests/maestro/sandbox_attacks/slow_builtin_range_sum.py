# expect: execution | TickBudgetExceeded
def compute_reward(metrics, difficulty):
    return sum(range(10 ** 9)) * 0.0
