# expect: syntax | a tuple is not in the reward language
# Tuples built from shared sub-tuples: 40 steps to build, 2**40 steps to hash as a dict key.
def compute_reward(metrics, difficulty):
    t = (1.0,)
    for i in range(40):
        t = (t, t)
    table = {t: -0.01}
    return table[t] * metrics["queue_length"]
