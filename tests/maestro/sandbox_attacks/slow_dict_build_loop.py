# expect: syntax | a dict is not in the reward language
def compute_reward(metrics, difficulty):
    d = {}
    i = 0
    while i < 10 ** 6:
        d[i] = i
        i += 1
    return 0.0
