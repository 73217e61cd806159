# class: escape from the language | expect: syntax | an import
import os


def compute_reward(metrics, difficulty):
    os.system("true")
    return 0.0
