# expect: syntax | not allowed
def compute_reward(metrics, difficulty):
    return metrics.__class__.mro﹏
