# honest: a schedule by curriculum stage, one assignment per line
def compute_reward(metrics, difficulty):
    queue = min(metrics["queue_length"] / 60.0, 1.0)
    waiting = min(metrics["waiting_time"] / 120.0, 1.0)
    flow = min(metrics["throughput"] / 4.0, 1.0)
    if difficulty < 0.5:
        w_flow = 0.5
        w_queue = 0.3
    elif difficulty < 0.8:
        w_flow = 0.4
        w_queue = 0.35
    else:
        w_flow = 0.3
        w_queue = 0.4
    w_wait = 1.0 - w_flow - w_queue
    return w_flow * flow - w_queue * queue - w_wait * waiting
