# expect: syntax | attribute access (.append) is not in the reward language (on
BOX = list()

def compute_reward(metrics, difficulty):
    BOX.append(1)
    return -min(len(BOX) / 1e4, 1.0)
