"""No episode ever ends by the environment's own signal.

expect: termination
"""


class EndlessEnv:
    def reset(self, seed=None):
        self.count = 0
        return "Count with me: \\boxed{n}.", {}

    def step(self, action):
        self.count += 1
        return "And again (%d)." % self.count, 0.0, False, False, {}
