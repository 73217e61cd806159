# class: runtime failure | expect: safety | outside [-1, 1]
def compute_reward(metrics, difficulty):
    return -metrics["queue_length"]
