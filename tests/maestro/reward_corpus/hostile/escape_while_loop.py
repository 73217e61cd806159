# class: escape from the language | expect: syntax | a while loop
def compute_reward(metrics, difficulty):
    x = 0.0
    while x < 1e12:
        x += 1.0
    return -min(metrics["queue_length"] / 60.0, 1.0)
