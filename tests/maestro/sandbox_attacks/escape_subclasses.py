# expect: syntax | a tuple is not in the reward language
def compute_reward(metrics, difficulty):
    return ().__class__.__bases__[0].__subclasses__()
