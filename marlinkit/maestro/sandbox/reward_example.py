"""A reward function in the form the sandbox accepts (``python -m marlinkit check-reward FILE``).

Also the worked example for reward prompts: small models keep a format far better with one example.
Written in the reward language (:mod:`marlinkit.maestro.sandbox.language`): no imports, ``min``, ``max``, ``abs``
and the math functions are provided.
"""


def compute_reward(metrics, difficulty):
    """Short queues, little waiting and balanced pressure; stricter on waiting at high difficulty."""
    queue = min(metrics["queue_length"] / 60.0, 1.0)
    waiting = min(metrics["waiting_time"] / 120.0, 1.0)
    pressure = min(abs(metrics["pressure"]) / 30.0, 1.0)
    flow = min(metrics["throughput"] / 3.0, 1.0)
    wait_weight = 0.2 + 0.2 * difficulty
    penalty = 0.4 * queue + wait_weight * waiting + 0.2 * pressure
    return max(-1.0, min(1.0, 0.3 * flow - penalty))
