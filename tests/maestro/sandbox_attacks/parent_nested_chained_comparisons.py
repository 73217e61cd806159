# expect: syntax | a list is not in the reward language
# 30 nested chained comparisons in ~600 characters: the old rewrite shared the middle operand between two
# calls, so the tree (and the parent's work before any worker started) doubled with every level.
def compute_reward(metrics, difficulty):
    q = metrics["queue_length"]
    return [float((0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= (0 <= q < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2) < 2))]
