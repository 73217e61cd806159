# expect: syntax | calling 'int' is not in the reward language
def compute_reward(metrics, difficulty):
    q = metrics['queue_length']
    if q == int(q):
        for i in range(int(q) * 500):
            pass
    return -min(q / 60.0, 1.0)
