# expect: execution | EvaluationError: pow() gives a value that is not finite (lin
def compute_reward(metrics, difficulty):
    return pow(3, 10 ** 8) * 0.0
