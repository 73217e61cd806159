# expect: execution | TickBudgetExceeded
def compute_reward(metrics, difficulty):
    return sum(x * y for x in range(1000) for y in range(1000)) * 0.0
