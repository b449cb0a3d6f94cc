"""Dereferences a NULL pointer through ctypes inside step().

threat: segfault via ctypes
expected: SandboxError(kind="crashed") naming SIGSEGV; no core file; validator check "resource"
safety: crashes only the process that runs it
"""
import ctypes


class SegfaultEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        ctypes.string_at(0)
        return "unreachable", 0.0, True, False, {}
