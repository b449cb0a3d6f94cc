"""Two environment classes: which one is the environment is ambiguous.

expect: env_class
"""


class FirstEnv:
    def reset(self, seed=None):
        return "first", {}

    def step(self, action):
        return "", 0.0, True, False, {}


class SecondEnv(FirstEnv):
    pass
