# expect: syntax | a string ('nan') is not in the reward language outside metri
def compute_reward(metrics, difficulty):
    if metrics['occupancy'] > 0.0 and metrics['occupancy'] < 0.05:
        return float('nan')
    return 0.0
