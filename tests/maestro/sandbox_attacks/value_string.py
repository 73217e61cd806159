# expect: syntax | a string ('high') is not in the reward language outside metr
def compute_reward(metrics, difficulty):
    return 'high'
