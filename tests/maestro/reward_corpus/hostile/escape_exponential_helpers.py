# class: escape from the language | expect: syntax | helpers inlined
def h0(x):
    return x + x + x + x + x + x + x + x


def h1(x):
    return h0(x) + h0(x) + h0(x) + h0(x) + h0(x) + h0(x) + h0(x) + h0(x)


def h2(x):
    return h1(x) + h1(x) + h1(x) + h1(x) + h1(x) + h1(x) + h1(x) + h1(x)


def h3(x):
    return h2(x) + h2(x) + h2(x) + h2(x) + h2(x) + h2(x) + h2(x) + h2(x)


def compute_reward(metrics, difficulty):
    return -min(h3(metrics["queue_length"]), 1.0)
