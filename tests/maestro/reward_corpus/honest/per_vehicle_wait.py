# honest: waiting per queued vehicle, guarded against an empty queue
def compute_reward(metrics, difficulty):
    queue = metrics["queue_length"]
    if queue > 0:
        wait_per_vehicle = metrics["waiting_time"] / queue
    else:
        wait_per_vehicle = 0.0
    penalty = 0.5 * min(queue / 60.0, 1.0) + 0.3 * min(metrics["waiting_time"] / 120.0, 1.0)
    penalty += 0.0 * wait_per_vehicle
    return max(-1.0, 0.2 * min(metrics["throughput"] / 3.0, 1.0) - penalty)
