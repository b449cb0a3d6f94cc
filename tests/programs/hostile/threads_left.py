"""Starts non-daemon threads in reset that keep running (spinning, sleeping and printing) after
every call returns, and would outlive an interpreter shutdown.

threat: threads left running after close
expected: closing the session kills the worker with all its threads at once (close does not
  wait for them); no process remains and nothing more is printed
safety: every thread stops by itself after 30 s of wall-clock time
"""
import threading
import time


def _busy(seconds):
    start = time.monotonic()
    while time.monotonic() < start + seconds:
        pass


def _chatty(seconds):
    start = time.monotonic()
    while time.monotonic() < start + seconds:
        print("thread still alive", flush=True)
        time.sleep(0.05)


class ThreadsLeftEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.threads = []

    def reset(self, seed=None):
        if not self.threads:
            for target in (_busy, _chatty, time.sleep):
                t = threading.Thread(target=target, args=(30.0,))  # non-daemon on purpose
                t.start()
                self.threads.append(t)
        return "Guess a digit 0-9 as \\boxed{d}. Threads: %d" % len(self.threads), {}

    def step(self, action):
        return "Wrong.", 0.0, True, False, {"alive": sum(t.is_alive() for t in self.threads)}
