# expect: syntax | a while loop at module level is not in the reward language (
while True:
    pass

def compute_reward(metrics, difficulty):
    queue = min(metrics['queue_length'] / 60.0, 1.0)
    waiting = min(metrics['waiting_time'] / 120.0, 1.0)
    return max(-1.0, min(1.0, -0.5 * queue - 0.4 * waiting))
