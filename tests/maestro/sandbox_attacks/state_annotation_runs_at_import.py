# expect: syntax | pow() takes 2 numbers, got 3 arguments
# Python evaluates module-level annotations: burn() ran at every worker start, outside every call's ticks.
def burn():
    big = 10 ** 1000
    return pow(3, big + 1, big + 7) + pow(5, big + 1, big + 7)


WARM: burn() = 0.0


def compute_reward(metrics, difficulty):
    return -metrics["queue_length"] / 200.0
