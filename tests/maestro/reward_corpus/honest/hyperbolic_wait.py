# honest: a hyperbolic normalisation of waiting and queue
def compute_reward(metrics, difficulty):
    wait = metrics["waiting_time"]
    queue = metrics["queue_length"]
    wait_term = wait / (wait + 60.0)
    queue_term = queue / (queue + 20.0)
    flow_term = metrics["throughput"] / (metrics["throughput"] + 2.0)
    return 0.4 * flow_term - 0.3 * wait_term - 0.3 * queue_term
