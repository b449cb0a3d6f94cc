"""Opens file descriptors (files and pipes) until the process runs out, keeps them open, and
answers.

threat: file descriptor exhaustion
expected: stops at the RLIMIT_NOFILE cap (nofile); the reply still arrives (the reply pipe was
  already open) and the next call still works; the supervisor's own descriptors do not leak
safety: at most 10,000 descriptors, all closed when the environment is closed or collected
"""
import json
import os


class FdExhaustionEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.held = []

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        error = None
        try:
            while len(self.held) < 10_000:
                self.held.extend(os.pipe())
                self.held.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as exc:
            error = repr(exc)
        return json.dumps({"held": len(self.held), "error": error}), 0.0, True, False, {}

    def close(self):
        for fd in self.held:
            os.close(fd)
        self.held = []
