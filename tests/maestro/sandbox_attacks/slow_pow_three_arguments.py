# expect: syntax | pow() takes 2 numbers, got 3 arguments
# Three-argument pow: a 3,300-bit exponent modulo a 3,300-bit number, charged nothing before.
def compute_reward(metrics, difficulty):
    big = 10 ** 1000
    return float(pow(3, big + 1, big + 7) % 2) * 0.0 - metrics["queue_length"] / 100.0
