# expect: syntax | a default argument value is not in the reward language
def compute_reward(metrics, difficulty, calls=[]):
    calls.append(1)
    return -min(len(calls) / 1e4, 1.0)
