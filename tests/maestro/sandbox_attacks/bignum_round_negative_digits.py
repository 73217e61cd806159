# expect: syntax | calling 'round' is not in the reward language
# round(x, -10**6) computes 10**(10**6): 3.3 million bits, past the integer cap that guarded only arithmetic.
def compute_reward(metrics, difficulty):
    return float(round(1, -10 ** 6)) - metrics["queue_length"] / 100.0
