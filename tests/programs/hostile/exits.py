"""Leaves in every way Python offers, chosen by `how`, in reset or step (`when`):
sys.exit, os._exit(0), os.abort, KeyboardInterrupt, GeneratorExit, and a custom BaseException.

threat: exiting the worker / escaping the call with non-Exception BaseExceptions
expected: SystemExit, KeyboardInterrupt, GeneratorExit and the custom BaseException are reported
  as SandboxError(kind="exception") naming the type, and the session stays usable; os._exit(0)
  (exit status 0 mid-call) and os.abort are SandboxError(kind="crashed"); validator check
  "exception" for the default (sys.exit in step)
safety: ends only the process that runs it
"""
import os
import sys


class HostileBaseError(BaseException):
    """Not an Exception: `except Exception` in a harness would miss it."""


def _leave(how):
    if how == "sys_exit":
        sys.exit(0)
    if how == "os_exit":
        os._exit(0)
    if how == "abort":
        os.abort()
    if how == "keyboard_interrupt":
        raise KeyboardInterrupt("hostile interrupt")
    if how == "generator_exit":
        raise GeneratorExit("hostile generator exit")
    if how == "custom_base":
        raise HostileBaseError("hostile base exception")
    if how == "none":
        return
    raise ValueError("unknown how %r" % how)


class ExitsEnv:
    def __init__(self, max_turns=25, how="sys_exit", when="step"):
        self.max_turns = max_turns
        self.how = how
        self.when = when

    def reset(self, seed=None):
        if self.when == "reset":
            _leave(self.how)
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        if self.when == "step" and action != "\\boxed{survive}":
            _leave(self.how)
        return "still here", 0.0, True, False, {}
