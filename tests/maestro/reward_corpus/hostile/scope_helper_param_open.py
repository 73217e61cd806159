# class: the static check mixes scopes | expect: syntax | the name 'open' is reserved
def helper(open, value):
    return value


def compute_reward(metrics, difficulty):
    return open("/etc/passwd")
