# honest: a sigmoid squashing helper
import math


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def compute_reward(metrics, difficulty):
    pressure = abs(metrics["pressure"]) / 30.0
    congestion = metrics["queue_length"] / 30.0 + metrics["waiting_time"] / 90.0 + pressure
    served = metrics["throughput"] / 2.0
    return 2.0 * sigmoid(served - congestion) - 1.0
