"""Ignores SIGTERM, SIGINT, SIGHUP, SIGALRM and SIGXCPU, cancels alarms and interval timers,
blocks every blockable signal, then spins inside step().

threat: signal handler tampering to survive deadlines
expected: step still raises SandboxError(kind="timeout") at call_timeout_s: the deadline is
  enforced from outside with SIGKILL (which cannot be ignored or blocked)
safety: the loop is bounded to 30 s of wall-clock time
"""
import signal
import time


class SignalTamperEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM, signal.SIGXCPU):
            signal.signal(sig, signal.SIG_IGN)
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        start = time.monotonic()
        n = 0
        while time.monotonic() < start + 30.0:
            n += 1
        return "Wrong.", 0.0, True, False, {}
