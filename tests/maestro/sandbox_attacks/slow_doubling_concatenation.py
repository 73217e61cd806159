# expect: execution | TickBudgetExceeded
def compute_reward(metrics, difficulty):
    xs = [0]
    for i in range(40):
        xs = xs + xs
    return 0.0
