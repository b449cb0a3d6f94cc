"""Allocates (and touches) memory in 16 MiB chunks inside step().

threat: memory bomb
expected: the worker dies (cgroup OOM kill, kind "crashed") or gets MemoryError (address-space
  rlimit, kind "exception"); the supervisor and other sessions are unaffected;
  validator check "resource" or "exception"
safety: capped at 1.5 GiB in total, released when step returns
"""
CHUNK = 16 << 20
CAP = 1536 << 20


class MemoryBombEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        hoard = []
        while len(hoard) * CHUNK < CAP:
            hoard.append(b"\x01" * CHUNK)
        total = len(hoard) * CHUNK
        hoard.clear()
        return "allocated %d bytes" % total, 0.0, True, False, {}
