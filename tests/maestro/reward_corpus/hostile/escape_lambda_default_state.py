# class: escape from the language | expect: syntax | a lambda
def compute_reward(metrics, difficulty):
    calls = (lambda seen=[]: seen)()
    return -min(metrics["queue_length"] / 60.0, 1.0)
