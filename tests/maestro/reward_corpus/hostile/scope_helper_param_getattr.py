# class: the static check mixes scopes | expect: syntax | the name 'getattr' is reserved
def helper(getattr):
    return getattr


def compute_reward(metrics, difficulty):
    return getattr(metrics, "__class__")
