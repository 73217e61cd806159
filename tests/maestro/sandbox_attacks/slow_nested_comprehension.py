# expect: syntax | a generator expression is not in the reward language
def compute_reward(metrics, difficulty):
    return sum(x * y for x in range(1000) for y in range(1000)) * 0.0
