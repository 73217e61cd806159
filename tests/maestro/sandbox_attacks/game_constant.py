# expect: safety | constant on the real traffic
def compute_reward(metrics, difficulty):
    return 0.25
