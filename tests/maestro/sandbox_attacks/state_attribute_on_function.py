# expect: syntax | attribute access (.calls) is not in the reward language (onl
def compute_reward(metrics, difficulty):
    compute_reward.calls = 1
    return 0.0
