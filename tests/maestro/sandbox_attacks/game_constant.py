# expect: safety | the reward is constant on the real traffic rows (it ignores
def compute_reward(metrics, difficulty):
    return 0.25
