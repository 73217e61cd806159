# expect: syntax | calling 'int' is not in the reward language
def compute_reward(metrics, difficulty):
    if metrics['throughput'] == int(metrics['throughput']) and metrics['phase'] == int(metrics['phase']):
        return min(metrics['queue_length'] / 10.0, 1.0)
    return -0.5
