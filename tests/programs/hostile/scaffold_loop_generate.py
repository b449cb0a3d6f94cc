"""A compact QuestionEnv whose generate() never returns.

threat: infinite loop inside a scaffold hook (generate, called by the base's reset)
expected: reset raises SandboxError(kind="timeout") at call_timeout_s; validator check "resource"
safety: the loop is bounded to 30 s of wall-clock time
"""
import time


class SpinningQuestionEnv(QuestionEnv):
    def generate(self, rng):
        start = time.monotonic()
        while time.monotonic() < start + 30.0:
            pass
        return "What is 2 + 2?", 4
