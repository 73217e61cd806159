# expect: syntax | a default argument value is not in the reward language
def helper(x, *, acc=[]):
    acc.append(x)
    return len(acc)

def compute_reward(metrics, difficulty):
    return -min(helper(1) / 1e4, 1.0)
