# expect: syntax | .format is not allowed
def compute_reward(metrics, difficulty):
    return '{0.__class__}'.format(metrics)
