"""Spins inside reset().

threat: infinite loop at reset
expected: reset raises SandboxError(kind="timeout") at call_timeout_s, the worker is SIGKILLed;
  validator check "resource"
safety: the loop is bounded to 30 s of wall-clock time
"""
import time


class LoopAtResetEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        start = time.monotonic()
        n = 0
        while time.monotonic() < start + 30.0:
            n += 1
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        return "Wrong.", 0.0, True, False, {}
