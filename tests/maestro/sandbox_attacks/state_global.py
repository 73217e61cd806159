# expect: syntax | Global is not allowed
N = 0

def compute_reward(metrics, difficulty):
    global N
    N = N + 1
    return 0.0
