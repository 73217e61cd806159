# expect: execution | returned str
def compute_reward(metrics, difficulty):
    return 'high'
