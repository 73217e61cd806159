# expect: execution | TickBudgetExceeded
def compute_reward(metrics, difficulty):
    return metrics['x' * 10 ** 6]
