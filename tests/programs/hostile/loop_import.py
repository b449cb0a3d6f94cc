"""Spins at import time (a module-level loop) before any environment object exists.

threat: infinite loop at import
expected: Sandbox.open raises SandboxError(kind="timeout") at load_timeout_s; validator check "load"
safety: the loop is bounded to 30 s of wall-clock time
"""
import random
import time


def _spin(seconds=30.0):
    start = time.monotonic()
    n = 0
    while time.monotonic() < start + seconds:
        n += 1
    return n


_SPINS = _spin()


class LoopAtImportEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.target = 0

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(0, 9)
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        won = action.strip() == "\\boxed{%d}" % self.target
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}
