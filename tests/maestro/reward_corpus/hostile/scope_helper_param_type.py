# class: the static check mixes scopes | expect: syntax | the name 'type' is reserved
def helper(type):
    return 0.0


def compute_reward(metrics, difficulty):
    return type(metrics).__mro__
