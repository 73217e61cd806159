# expect: syntax | calling 'int' is not in the reward language
def compute_reward(metrics, difficulty):
    if metrics['phase_duration'] == int(metrics['phase_duration']) and metrics['phase_duration'] > 30:
        return -5.0
    return -min(metrics['queue_length'] / 60.0, 1.0)
