# expect: syntax | the program nests 337 levels deep (limit 100): split long su
# 330 unary minuses (~420 characters): the recursive rewrite ran out of stack and a RecursionError escaped validate().
def compute_reward(metrics, difficulty):
    return ------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------metrics["queue_length"] / 1000.0
