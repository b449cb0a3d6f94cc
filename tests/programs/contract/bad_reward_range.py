"""Rewards outside [-10, 10].

expect: contract
"""


class GenerousEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 1000)
        return "Guess the number: \\boxed{n}.", {}

    def step(self, action):
        return "A big reward for trying.", 50.0, False, False, {}
