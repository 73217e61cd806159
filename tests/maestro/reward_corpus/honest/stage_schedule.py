# honest: a schedule by curriculum stage
def compute_reward(metrics, difficulty):
    queue = min(metrics["queue_length"] / 60.0, 1.0)
    waiting = min(metrics["waiting_time"] / 120.0, 1.0)
    flow = min(metrics["throughput"] / 4.0, 1.0)
    if difficulty < 0.5:
        weights_flow, weights_queue, weights_wait = 0.5, 0.3, 0.2
    elif difficulty < 0.8:
        weights_flow, weights_queue, weights_wait = 0.4, 0.35, 0.25
    else:
        weights_flow, weights_queue, weights_wait = 0.3, 0.4, 0.3
    return weights_flow * flow - weights_queue * queue - weights_wait * waiting
