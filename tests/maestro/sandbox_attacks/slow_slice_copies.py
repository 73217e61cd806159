# expect: syntax | calling 'list' is not in the reward language
def compute_reward(metrics, difficulty):
    xs = list(range(1000))
    for i in range(50):
        ys = xs[:]
    return 0.0
