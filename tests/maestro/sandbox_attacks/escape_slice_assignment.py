# expect: syntax | a list is not in the reward language
def compute_reward(metrics, difficulty):
    xs = [0.0]
    xs[0:1] = [1.0]
    return 0.0
