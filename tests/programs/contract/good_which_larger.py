"""A question that names its two options, in shuffled order (a fixed position wins about half
the time: no leak).

skill: Mathematical Reasoning
"""

import random
import re


class WhichLargerEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.a, self.b = random.Random(seed).sample(range(1, 100), 2)
        return (
            f"Which is larger, {self.a} or {self.b}? Give your final answer as \\boxed{{answer}}.",
            {},
        )

    def step(self, action):
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        won = bool(m) and m.group(1).strip() == str(max(self.a, self.b))
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return f"\\boxed{{{max(self.a, self.b)}}}"
