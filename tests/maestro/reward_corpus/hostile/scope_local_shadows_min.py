# class: the static check mixes scopes | expect: syntax | the name 'min' is reserved
def compute_reward(metrics, difficulty):
    min = metrics["queue_length"]
    return -min
