# expect: syntax | attribute access (.__class__) is not in the reward language
def compute_reward(metrics, difficulty):
    return metrics.__class__.mro﹏
