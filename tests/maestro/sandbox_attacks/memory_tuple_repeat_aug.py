# expect: syntax | a tuple is not in the reward language
def compute_reward(metrics, difficulty):
    t = (0,)
    t *= 10 ** 9
    return 0.0
