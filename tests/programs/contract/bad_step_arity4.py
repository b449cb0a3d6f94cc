"""The old gym 4-tuple: (obs, reward, done, info).

expect: contract
"""


class OldGymEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 1000)
        return "Guess the number: \\boxed{n}.", {}

    def step(self, action):
        return "Wrong.", 0.0, False, {}
