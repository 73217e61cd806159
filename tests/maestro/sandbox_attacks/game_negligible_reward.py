# expect: safety | the reward barely varies: 170 x its range on real traffic is
# -5e-324 per vehicle: not constant, falls with the queue, and is nothing even 170 times over.
def compute_reward(metrics, difficulty):
    return -5e-324 * metrics["queue_length"]
