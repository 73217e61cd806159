# expect: execution | TickBudgetExceeded
def compute_reward(metrics, difficulty):
    return math.fsum(range(10 ** 7)) * 0.0
