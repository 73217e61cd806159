# expect: syntax | unknown metric 'speed'
def compute_reward(metrics, difficulty):
    return metrics['speed']
