# expect: syntax | no module-level mutable state
SEEN = {'n': 0}

def compute_reward(metrics, difficulty):
    SEEN['n'] = SEEN['n'] + 1
    return -min(SEEN['n'] / 1e4, 1.0)
