# expect: execution | RecursionError
def down(n):
    return down(n + 1)

def compute_reward(metrics, difficulty):
    return down(0)
