# expect: execution | returned NoneType
def compute_reward(metrics, difficulty):
    x = 1
