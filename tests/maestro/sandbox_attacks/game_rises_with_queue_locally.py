# expect: safety | the reward rises with queue_length: 0.0003329 -> 0.0093329 w
# A sawtooth: falling overall (negative Spearman), but each extra vehicle pays on nine steps out of ten.
def compute_reward(metrics, difficulty):
    q = metrics["queue_length"]
    step = q // 10
    return max(-1.0, min(1.0, -0.1 * step + 0.009 * (q - 10 * step)))
