# expect: syntax | NamedExpr is not allowed
def compute_reward(metrics, difficulty):
    return (x := 0.0)
