# class: unmetered work | expect: syntax | the operator '&'
def compute_reward(metrics, difficulty):
    keys = metrics.keys()
    mixed = (keys & {"queue_length"}) ^ (keys - {"delay"})
    return -min(metrics["queue_length"] / 60.0, 1.0) + 0.0 * len(mixed)
