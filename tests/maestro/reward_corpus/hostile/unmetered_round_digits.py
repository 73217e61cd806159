# class: unmetered work | expect: syntax | calling 'round'
def compute_reward(metrics, difficulty):
    return round(-min(metrics["queue_length"] / 60.0, 1.0), 1000000)
