# expect: syntax | calling 'list' is not in the reward language
BOX = list()

def compute_reward(metrics, difficulty):
    BOX.append(1)
    return -min(len(BOX) / 1e4, 1.0)
