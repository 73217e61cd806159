# expect: syntax | a list comprehension is not in the reward language
BOX = [0 for x in range(1)]

def compute_reward(metrics, difficulty):
    BOX[0] = BOX[0] + 1
    return -min(BOX[0] / 1e4, 1.0)
