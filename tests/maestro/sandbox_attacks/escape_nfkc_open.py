# expect: syntax | name 'open'
def compute_reward(metrics, difficulty):
    return len(ｏｐｅｎ('/etc/passwd').read())
