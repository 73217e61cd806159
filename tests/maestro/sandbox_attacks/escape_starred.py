# expect: syntax | Starred is not allowed
def compute_reward(metrics, difficulty):
    xs = [1.0]
    return max(*xs) * 0.0
