"""A top-level side effect: print() runs when the file is executed.

expect: top_level
"""

print("loading the environment")


class NoisyEnv:
    def reset(self, seed=None):
        return "", {}

    def step(self, action):
        return "", 0.0, True, False, {}
