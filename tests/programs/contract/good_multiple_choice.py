"""Multiple choice with lettered options, shuffled by the seed.

skill: Mathematical Reasoning
"""

import random
import re


class MultipleChoiceEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        a, b = rng.randint(2, 9), rng.randint(2, 9)
        self.answer = a * b
        options = {self.answer}
        while len(options) < 4:
            options.add(self.answer + rng.choice([-3, -2, -1, 1, 2, 3, 10]))
        self.options = rng.sample(sorted(options), 4)
        self.letter = "ABCD"[self.options.index(self.answer)]
        listed = "  ".join(f"{l}) {o}" for l, o in zip("ABCD", self.options))
        return f"What is {a} * {b}?  {listed}  Reply with the letter, as \\boxed{{X}}.", {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        won = bool(m) and m.group(1).strip().upper() == self.letter
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return f"\\boxed{{{self.letter}}}"
