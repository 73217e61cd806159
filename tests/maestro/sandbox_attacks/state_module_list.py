# expect: syntax | a list is not in the reward language
CALLS = []

def compute_reward(metrics, difficulty):
    CALLS.append(1)
    return -min(len(CALLS) / 1e4, 1.0)
