# expect: syntax | a default argument value is not in the reward language
def seen(x, memory={}):
    memory[len(memory)] = x
    return len(memory)

def compute_reward(metrics, difficulty):
    return -min(seen(1) / 1e4, 1.0)
