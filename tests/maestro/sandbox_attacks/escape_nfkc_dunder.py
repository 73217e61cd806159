# expect: syntax | does not parse: SyntaxError: invalid character '＿' (U+FF3F)
def compute_reward(metrics, difficulty):
    return ＿＿import＿＿('os')
