# expect: syntax | compute_reward can reach its end without a return (Python wo
def compute_reward(metrics, difficulty):
    x = 1
