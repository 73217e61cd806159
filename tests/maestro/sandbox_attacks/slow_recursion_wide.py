# expect: syntax | recursion is not in the reward language (fib -> fib)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def compute_reward(metrics, difficulty):
    return -min(fib(25) * 0.0 + metrics['queue_length'] / 60.0, 1.0)
