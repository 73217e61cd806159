# expect: execution | KeyError
def compute_reward(metrics, difficulty):
    return metrics['speed']
