# class: escape from the language | expect: syntax | attribute access (.__class__)
def compute_reward(metrics, difficulty):
    return ().__class__.__bases__[0].__subclasses__()
