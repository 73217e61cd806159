# expect: syntax | a nested def is not in the reward language: define helpers a
def compute_reward(metrics, difficulty):
    n = 0
    def bump():
        nonlocal n
        n = n + 1
    bump()
    return 0.0
