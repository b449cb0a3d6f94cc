"""Pays the full reward and ends the episode whatever the agent says.

threat: an environment that always pays 1.0 (reward hacking by the designer)
expected: validator check "not_trivial" (every probe policy wins)
safety: harmless
"""
import random


class AlwaysPaysEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.question = ""

    def reset(self, seed=None):
        rng = random.Random(seed)
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        self.question = "What is %d * %d? Answer as \\boxed{n}." % (a, b)
        return self.question, {}

    def step(self, action):
        return "Correct!", 1.0, True, False, {}
