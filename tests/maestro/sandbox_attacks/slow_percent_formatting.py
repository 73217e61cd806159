# expect: syntax | a string ('%0900000d') is not in the reward language outside
# % formatting builds a string of any width from constant inputs, and the meter did not see it.
def compute_reward(metrics, difficulty):
    text = "%0900000d" % 1
    return -metrics["queue_length"] / 200.0 + 0.0 * len(text)
