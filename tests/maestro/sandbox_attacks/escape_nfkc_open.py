# expect: syntax | a string ('/etc/passwd') is not in the reward language outsi
def compute_reward(metrics, difficulty):
    return len(ｏｐｅｎ('/etc/passwd').read())
