# expect: syntax | a for loop is not in the reward language
def compute_reward(metrics, difficulty):
    x = 3
    for i in range(40):
        x = x * x
    return x * 0.0
