"""Tries to signal processes outside its sandbox: its parent (the zygote, or the supervisor in
strict mode), a target pid given by the test, its parent's process group (killpg), and every
process (kill -1).

threat: signalling the parent and other processes
expected: every attempt fails with PermissionError (seccomp allows kill only to the worker
  itself; Landlock scopes signals); the target process receives nothing and the zygote survives
safety: only SIGURG (ignored by default) is sent, except that with lethal=True the parent gets
  SIGKILL; never sends SIGKILL to -1 or to a process group
"""
import json
import os
import signal


def _send(fn):
    try:
        fn()
        return "delivered"
    except OSError as exc:
        return "blocked: " + repr(exc)


class SignalParentEnv:
    def __init__(self, max_turns=25, target_pid=0, lethal=False):
        self.max_turns = max_turns
        self.target_pid = target_pid
        self.lethal = lethal

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        parent = os.getppid()
        report = {"parent": parent}
        parent_sig = signal.SIGKILL if self.lethal else signal.SIGURG
        report["kill(parent)"] = _send(lambda: os.kill(parent, parent_sig))
        report["kill(parent, 0)"] = _send(lambda: os.kill(parent, 0))
        if self.target_pid:
            report["kill(target)"] = _send(lambda: os.kill(self.target_pid, signal.SIGURG))
            report["killpg(target)"] = _send(
                lambda: os.killpg(os.getpgid(self.target_pid), signal.SIGURG))
        report["killpg(parent)"] = _send(lambda: os.killpg(os.getpgid(parent), signal.SIGURG))
        report["kill(-1)"] = _send(lambda: os.kill(-1, signal.SIGURG))
        report["kill(0)"] = _send(lambda: os.kill(0, signal.SIGURG))
        report["pidfd_open(parent)"] = _send(lambda: os.close(os.pidfd_open(parent)))
        report["kill(self, 0)"] = _send(lambda: os.kill(os.getpid(), 0))
        return json.dumps(report), 0.0, True, False, {}
