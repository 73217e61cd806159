# expect: execution | TickBudgetExceeded
def compute_reward(metrics, difficulty):
    while True:
        pass
