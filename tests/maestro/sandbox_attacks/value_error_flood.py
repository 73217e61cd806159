# expect: syntax | a string ('x') is not in the reward language outside metrics
def compute_reward(metrics, difficulty):
    return metrics['x' * 10 ** 6]
