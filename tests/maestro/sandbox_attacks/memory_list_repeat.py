# expect: syntax | a list is not in the reward language
def compute_reward(metrics, difficulty):
    xs = [0] * 10 ** 9
    return 0.0
