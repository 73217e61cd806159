# class: runtime failure | expect: execution | division by zero
def compute_reward(metrics, difficulty):
    return -min(metrics["waiting_time"] / metrics["queue_length"], 1.0)
