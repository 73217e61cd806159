# expect: syntax | only the metrics can be subscripted (metrics["name"]): conta
def compute_reward(metrics, difficulty):
    return sorted(list(range(100000)))[0] * 0.0
