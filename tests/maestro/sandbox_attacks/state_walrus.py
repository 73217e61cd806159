# expect: syntax | an assignment expression (:=) is not in the reward language
def compute_reward(metrics, difficulty):
    return (x := 0.0)
