# expect: syntax | default argument
def seen(x, memory={}):
    memory[len(memory)] = x
    return len(memory)

def compute_reward(metrics, difficulty):
    return -min(seen(1) / 1e4, 1.0)
