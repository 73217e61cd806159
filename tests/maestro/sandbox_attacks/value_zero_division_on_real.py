# expect: execution | EvaluationError: division by zero (line 3) on row 0: queue_l
def compute_reward(metrics, difficulty):
    return -1.0 / (1.0 + metrics['queue_length']) + 1.0 / metrics['throughput']
