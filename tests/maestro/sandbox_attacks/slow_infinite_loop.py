# expect: syntax | a while loop is not in the reward language
def compute_reward(metrics, difficulty):
    while True:
        pass
