# class: unmetered work | expect: syntax | a set comprehension
def compute_reward(metrics, difficulty):
    colliding = {k * (2 ** 61 - 1) for k in range(4000)}
    return -min(metrics["queue_length"] / 60.0, 1.0) + 0.0 * len(colliding)
