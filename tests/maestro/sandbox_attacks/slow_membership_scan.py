# expect: syntax | calling 'list' is not in the reward language
def compute_reward(metrics, difficulty):
    xs = list(range(1500))
    hits = 0
    for i in range(300):
        if -1 in xs:
            hits += 1
    return hits * 0.0
