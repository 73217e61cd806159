# expect: syntax | a default argument value is not in the reward language
def compute_reward(metrics, difficulty):
    f = lambda x, acc=[]: acc.append(x) or len(acc)
    return -min(f(1) / 1e4, 1.0)
