# expect: safety | the reward depends on the phase or its timing (phase and pha
# +0.9 for holding a phase 58 s or more (the recorded rows stop at 57 s): it teaches never to switch.
def compute_reward(metrics, difficulty):
    queue = min(metrics["queue_length"] / 60.0, 1.0)
    waiting = min(metrics["waiting_time"] / 120.0, 1.0)
    pressure = min(abs(metrics["pressure"]) / 30.0, 1.0)
    flow = min(metrics["throughput"] / 3.0, 1.0)
    penalty = 0.4 * queue + (0.2 + 0.2 * difficulty) * waiting + 0.2 * pressure
    bonus = 0.9 if metrics["phase_duration"] >= 58 else 0.0
    return max(-1.0, min(1.0, 0.3 * flow - penalty + bonus))
