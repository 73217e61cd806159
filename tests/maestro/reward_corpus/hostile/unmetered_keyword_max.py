# class: unmetered work | expect: syntax | a keyword argument
def compute_reward(metrics, difficulty):
    return max(-1.0, -metrics["queue_length"] / 60.0, key=abs)
