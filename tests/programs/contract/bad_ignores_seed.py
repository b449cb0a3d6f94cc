"""One fixed question whatever the seed: a task to memorise, not to learn.

expect: seed_used
"""

import re


class FixedQuestionEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return "What is 17 * 23? Answer as \\boxed{n}.", {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^}]*)\}", action)
        won = bool(m) and m.group(1).strip() == "391"
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return "\\boxed{391}"
