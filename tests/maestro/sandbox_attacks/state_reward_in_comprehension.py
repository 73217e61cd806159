# expect: syntax | a list comprehension is not in the reward language
def helper(xs):
    return [compute_reward for compute_reward in xs]

def compute_reward(metrics, difficulty):
    queue = min(metrics['queue_length'] / 60.0, 1.0)
    waiting = min(metrics['waiting_time'] / 120.0, 1.0)
    return max(-1.0, min(1.0, -0.5 * queue - 0.4 * waiting))
