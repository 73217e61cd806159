# class: unmetered work | expect: syntax | a keyword argument
def compute_reward(metrics, difficulty):
    walked = all(enumerate(iterable=tuple(range(1750))))
    return -min(metrics["queue_length"] / 60.0, 1.0) + 0.0 * walked
