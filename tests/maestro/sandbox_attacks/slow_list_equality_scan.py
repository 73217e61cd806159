# expect: syntax | calling 'list' is not in the reward language
def compute_reward(metrics, difficulty):
    xs = list(range(900))
    ys = list(range(900))
    same = 0
    for i in range(500):
        if xs == ys:
            same += 1
    return same * 0.0
