# class: unmetered work | expect: syntax | a tuple
def compute_reward(metrics, difficulty):
    node = (1.0, 2.0)
    node = (node, node)
    node = (node, node)
    node = (node, node)
    return -min(metrics["queue_length"] / 60.0, 1.0) + 0.0 * hash(node)
