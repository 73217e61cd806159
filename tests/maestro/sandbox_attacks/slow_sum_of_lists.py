# expect: syntax | a tuple is not in the reward language
# sum(rows, ()) concatenates: 60 x 60 items copied ~30 times each, charged as one walk over 60 rows.
ROWS = ((0.0,) * 60,) * 60


def compute_reward(metrics, difficulty):
    flat = sum(ROWS, ())
    return -metrics["queue_length"] / 200.0 + 0.0 * len(flat)
