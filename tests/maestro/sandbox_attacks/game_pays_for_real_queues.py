# expect: syntax | calling 'int' is not in the reward language
def compute_reward(metrics, difficulty):
    q = metrics['queue_length']
    if q == int(q):
        return min(q / 30.0, 1.0)
    return -min(q / 60.0, 1.0)
