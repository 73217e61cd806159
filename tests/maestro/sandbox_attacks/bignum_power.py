# expect: execution | EvaluationError: '**' gives a value that is not finite (line
def compute_reward(metrics, difficulty):
    return 2 ** (10 ** 10)
