"""The question prints its own answer: copying the last number wins.

expect: answer_leak
"""

import random
import re


class AnswerInQuestionEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.a, self.b = rng.randint(1, 50), rng.randint(1, 50)
        return (
            f"What is {self.a} + {self.b}? (It is {self.a + self.b}.) Answer as \\boxed{{answer}}.",
            {},
        )

    def step(self, action):
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        won = bool(m) and m.group(1).strip() == str(self.a + self.b)
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return f"\\boxed{{{self.a + self.b}}}"
