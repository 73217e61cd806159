# class: escape from the language | expect: syntax | nodes after unrolling
def compute_reward(metrics, difficulty):
    total = 0.0
    for a in metrics:
        for b in metrics:
            for c in metrics:
                for d in metrics:
                    total += metrics[a] * metrics[b] * metrics[c] * metrics[d] * 0.0
    return -min(metrics["queue_length"] / 60.0, 1.0) + total
