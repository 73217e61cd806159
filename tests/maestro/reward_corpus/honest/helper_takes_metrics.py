# honest: helpers that take the metrics dict
def congestion(metrics):
    return 0.6 * min(metrics["queue_length"] / 80.0, 1.0) + 0.4 * metrics["occupancy"]


def service(metrics):
    return min(metrics["throughput"] / 5.0, 1.0)


def compute_reward(metrics, difficulty):
    return max(-1.0, min(1.0, 0.5 * service(metrics) - 0.5 * congestion(metrics)))
