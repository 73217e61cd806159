# expect: syntax | does not parse
def compute_reward(metrics, difficulty):
    return ＿＿import＿＿('os')
