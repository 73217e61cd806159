# class: escape from the language | expect: syntax | recursion
def spin(x):
    return spin(x + 1.0)


def compute_reward(metrics, difficulty):
    return spin(metrics["queue_length"])
