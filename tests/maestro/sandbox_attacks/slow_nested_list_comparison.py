# expect: syntax | a list is not in the reward language
# Two equal but separate nests of shared lists: comparing them walks 2**40 pairs.
def compute_reward(metrics, difficulty):
    a = [1.0]
    b = [1.0]
    for i in range(40):
        a = [a, a]
        b = [b, b]
    return -metrics["queue_length"] / 100.0 if a == b else 0.0
