# expect: syntax | no module-level mutable state
CALLS = []

def compute_reward(metrics, difficulty):
    CALLS.append(1)
    return -min(len(CALLS) / 1e4, 1.0)
