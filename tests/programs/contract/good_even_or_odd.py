"""A question that names its two word options.

skill: Mathematical Reasoning
"""

import random
import re


class EvenOrOddEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(1, 999)
        return f"Is {self.n} even or odd? Give your final answer as \\boxed{{answer}}.", {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        want = "even" if self.n % 2 == 0 else "odd"
        won = bool(m) and m.group(1).strip().lower() == want
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return "\\boxed{" + ("even" if self.n % 2 == 0 else "odd") + "}"
