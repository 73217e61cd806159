# class: unmetered work | expect: syntax | the operator '|'
def compute_reward(metrics, difficulty):
    pool = tuple(range(1 << 20))
    joined = metrics.keys() | pool
    return -min(metrics["queue_length"] / 60.0, 1.0) + 0.0 * len(joined)
