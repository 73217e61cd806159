# expect: safety | the reward rises with queue_length: 0 -> 1 when queue_length
# The maximum reward for queues of 70 or more, one vehicle beyond the longest recorded queue.
def compute_reward(metrics, difficulty):
    queue = min(metrics["queue_length"] / 60.0, 1.0)
    waiting = min(metrics["waiting_time"] / 120.0, 1.0)
    pressure = min(abs(metrics["pressure"]) / 30.0, 1.0)
    flow = min(metrics["throughput"] / 3.0, 1.0)
    penalty = 0.4 * queue + (0.2 + 0.2 * difficulty) * waiting + 0.2 * pressure
    if metrics["queue_length"] >= 70:
        return 1.0
    return max(-1.0, min(1.0, 0.3 * flow - penalty))
