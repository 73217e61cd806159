# expect: syntax | only assignments to one plain name are in the reward languag
SEEN = {'n': 0}

def compute_reward(metrics, difficulty):
    SEEN['n'] = SEEN['n'] + 1
    return -min(SEEN['n'] / 1e4, 1.0)
