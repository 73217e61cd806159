# expect: syntax | a dict comprehension is not in the reward language
def compute_reward(metrics, difficulty):
    d = {i * (2 ** 61 - 1): i for i in range(5000)}
    return len(d) * 0.0
