# expect: syntax | assigning to a slice
def compute_reward(metrics, difficulty):
    xs = [0.0]
    xs[0:1] = [1.0]
    return 0.0
