# expect: syntax | a string ('{0.__class__}') is not in the reward language out
def compute_reward(metrics, difficulty):
    return '{0.__class__}'.format(metrics)
