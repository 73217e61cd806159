# expect: execution | TickBudgetExceeded
def compute_reward(metrics, difficulty):
    s = 'a' * 10 ** 10
    return 0.0
