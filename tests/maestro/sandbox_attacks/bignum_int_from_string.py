# expect: syntax | a string ('z') is not in the reward language outside metrics
# int(str, base) builds an integer no arithmetic produced: 800 base-36 digits are 4,136 bits.
DIGITS = "z" * 800


def compute_reward(metrics, difficulty):
    return float(int(DIGITS, 36) % 7) * 0.0 - metrics["queue_length"] / 200.0
