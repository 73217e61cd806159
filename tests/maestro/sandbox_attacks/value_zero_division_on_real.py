# expect: execution | ZeroDivisionError
def compute_reward(metrics, difficulty):
    return -1.0 / (1.0 + metrics['queue_length']) + 1.0 / metrics['throughput']
