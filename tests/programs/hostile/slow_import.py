"""Takes about one second of module-level work before the class is defined.

threat: slow import (a bounded module-level loop)
expected: loads when load_timeout_s is longer than the work, times out (kind "timeout") when it
  is shorter
safety: the loop is bounded to 1 s of wall-clock time
"""
import random
import time


def _warm_up(seconds=1.0):
    start = time.monotonic()
    table = []
    while time.monotonic() < start + seconds:
        table.append(len(table) % 7)
        if len(table) > 100_000:
            table.clear()
    return len(table)


_TABLE = _warm_up()


class SlowImportEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.target = 0

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(0, 9)
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        won = action.strip() == "\\boxed{%d}" % self.target
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}
