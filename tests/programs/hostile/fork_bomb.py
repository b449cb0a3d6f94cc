"""Tries to fork repeatedly and to start many threads inside step().

threat: fork bomb (processes and threads)
expected: os.fork fails with PermissionError (seccomp) so no process is created; threads stop at
  the cgroup pids limit (pids_max, the main thread included); the step still answers
safety: at most 32 forks (each child exits at once and is reaped) and 64 threads that end
  within 2 s
"""
import json
import os
import threading


class ForkBombEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        forks, fork_error = 0, None
        for _ in range(32):
            try:
                pid = os.fork()
            except OSError as exc:
                fork_error = repr(exc)
                break
            if pid == 0:
                os._exit(0)
            forks += 1
            os.waitpid(pid, 0)
        gate = threading.Event()
        threads, thread_error = [], None
        for _ in range(64):
            t = threading.Thread(target=gate.wait, args=(2.0,), daemon=True)
            try:
                t.start()
            except RuntimeError as exc:
                thread_error = repr(exc)
                break
            threads.append(t)
        gate.set()
        for t in threads:
            t.join(2.0)
        report = {"forks": forks, "fork_error": fork_error, "threads": len(threads),
                  "thread_error": thread_error}
        return json.dumps(report), 0.0, True, False, {}
