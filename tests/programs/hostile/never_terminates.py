"""Never signals the end of an episode: every step is "keep going", terminated and truncated
stay False, and it ignores max_turns.

threat: an environment that never terminates
expected: the runtime truncates every episode at max_turns (return 0); validator check
  "termination"
safety: harmless
"""
import random


class NeverTerminatesEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.count = 0

    def reset(self, seed=None):
        self.count = random.Random(seed).randint(0, 5)
        return "Count forever. Say \\boxed{next}.", {}

    def step(self, action):
        self.count += 1
        return "Count is %d. Keep going." % self.count, 0.0, False, False, {}
