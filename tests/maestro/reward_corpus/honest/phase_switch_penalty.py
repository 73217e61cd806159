# honest: penalises holding one phase too long (a phase-timing term the prompt did not ask for)
def compute_reward(metrics, difficulty):
    queue = min(metrics["queue_length"] / 60.0, 1.0)
    flow = min(metrics["throughput"] / 4.0, 1.0)
    hold_penalty = 0.1 if metrics["phase_duration"] > 90 else 0.0
    return max(-1.0, min(1.0, 0.4 * flow - 0.5 * queue - hold_penalty))
