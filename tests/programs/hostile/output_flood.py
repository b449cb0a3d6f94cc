"""Prints 100 MB to stdout (and 1 MB to stderr) in a loop inside step(), then answers normally.

threat: output floods
expected: the step answers normally (the supervisor keeps draining the pipe); Session.output
  keeps at most max_output_bytes and says how many bytes were dropped
safety: bounded to 100 writes of 1 MB
"""
import sys

LINE = ("flood " * 20 + "\n") * 8000  # about 1 MB


class OutputFloodEnv:
    def __init__(self, max_turns=25, megabytes=100):
        self.max_turns = max_turns
        self.megabytes = megabytes

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        for _ in range(self.megabytes):
            print(LINE, end="")
        sys.stdout.flush()
        sys.stderr.write(LINE)
        sys.stderr.flush()
        return "flooded", 0.0, True, False, {}
