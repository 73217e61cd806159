# expect: syntax | recursion is not in the reward language (down -> down)
def down(n):
    return down(n + 1)

def compute_reward(metrics, difficulty):
    return down(0)
