# expect: execution | sum() start must be a number
# sum(rows, []) concatenates: quadratic work charged as one walk over its input.
def compute_reward(metrics, difficulty):
    rows = [[0.0] * 40 for i in range(40)]
    flat = sum(rows, [])
    return -metrics["queue_length"] / 200.0 + 0.0 * len(flat)
