# expect: syntax | assigning to attribute
def compute_reward(metrics, difficulty):
    compute_reward.calls = 1
    return 0.0
