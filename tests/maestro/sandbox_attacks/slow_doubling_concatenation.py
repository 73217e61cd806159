# expect: syntax | a list is not in the reward language
def compute_reward(metrics, difficulty):
    xs = [0]
    for i in range(40):
        xs = xs + xs
    return 0.0
