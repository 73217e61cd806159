# expect: syntax | calling 'round' is not in the reward language
def compute_reward(metrics, difficulty):
    q = metrics['queue_length']
    if round(difficulty * 20) == difficulty * 20:
        return min(q / 30.0, 1.0)
    return -min(q / 60.0, 1.0)
