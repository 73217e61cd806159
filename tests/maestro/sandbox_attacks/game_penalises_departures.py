# expect: safety | the reward falls with throughput: -0.2 -> -0.3 when throughp
# Every vehicle that leaves the intersection costs reward: it teaches to hold traffic back.
def compute_reward(metrics, difficulty):
    queue = min(metrics["queue_length"] / 60.0, 1.0)
    waiting = min(metrics["waiting_time"] / 120.0, 1.0)
    pressure = min(abs(metrics["pressure"]) / 30.0, 1.0)
    flow = min(metrics["throughput"] / 3.0, 1.0)
    penalty = 0.4 * queue + (0.2 + 0.2 * difficulty) * waiting + 0.2 * pressure
    return max(-1.0, min(1.0, -0.3 * flow - penalty))
