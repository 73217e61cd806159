# expect: syntax | chained comparison with 'in'
def compute_reward(metrics, difficulty):
    return float(1 in [1] in [[1]])
