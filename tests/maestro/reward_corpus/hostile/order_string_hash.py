# class: verdicts that change between runs | expect: syntax | a string
def compute_reward(metrics, difficulty):
    salt = hash("queue_length") % 2
    return -min(metrics["queue_length"] / 60.0, 1.0) * (1.0 + 0.01 * salt)
