# expect: syntax | a list is not in the reward language
def compute_reward(metrics, difficulty):
    xs = [1.0]
    return max(*xs) * 0.0
