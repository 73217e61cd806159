# expect: syntax | no module-level mutable state
BOX = list()

def compute_reward(metrics, difficulty):
    BOX.append(1)
    return -min(len(BOX) / 1e4, 1.0)
