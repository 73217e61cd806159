# expect: syntax | a string ('a') is not in the reward language outside metrics
def compute_reward(metrics, difficulty):
    s = 'a' * 10 ** 10
    return 0.0
