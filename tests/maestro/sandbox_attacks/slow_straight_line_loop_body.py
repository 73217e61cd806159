# expect: syntax | a while loop is not in the reward language
# A loop whose long straight-line body did a hundred operations per tick: 300 iterations were
# 600 ticks, now each costs one tick per 16 nodes it runs.
def compute_reward(metrics, difficulty):
    a = 0.5
    b = 0.25
    x = 0.0
    i = 0
    while i < 300:
        i = i + 1
        x = a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b
        x = a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b - a * b
    return max(-1.0, -metrics["queue_length"] / 100.0 + 0.0 * x)
