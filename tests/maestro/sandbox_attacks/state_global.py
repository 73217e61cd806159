# expect: syntax | global is not in the reward language
N = 0

def compute_reward(metrics, difficulty):
    global N
    N = N + 1
    return 0.0
