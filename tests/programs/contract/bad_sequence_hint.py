"""A sequence whose next term is printed as a hint.

expect: answer_leak
"""

import random
import re


class SequenceHintEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        start, step = rng.randint(1, 20), rng.randint(2, 9)
        self.terms = [start + i * step for i in range(5)]
        shown = ", ".join(map(str, self.terms[:4]))
        return (
            f"Continue the sequence {shown}, ... (hint: the next term is {self.terms[4]}). Reply \\boxed{{n}}.",
            {},
        )

    def step(self, action):
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        won = bool(m) and m.group(1).strip() == str(self.terms[4])
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return f"\\boxed{{{self.terms[4]}}}"
