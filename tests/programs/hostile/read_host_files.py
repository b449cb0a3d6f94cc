"""Tries to read host files: /etc/shadow, /etc/passwd, the test file that runs it, /root,
/proc/1/cmdline; and, as positive controls, a zoneinfo file and the interpreter's own os.py, which
the sandbox allows.

threat: reading host files
expected: every host path is blocked (Landlock, unprivileged uid); the observation carries the
  first bytes of a file only if it was readable; the zoneinfo control is readable
safety: read-only; returns at most 32 bytes per file
"""
import json
import os

DEFAULT_PATHS = ("/etc/shadow", "/etc/passwd", "/root", "/proc/1/cmdline", "/etc/hostname")


class ReadHostFilesEnv:
    def __init__(self, max_turns=25, paths=DEFAULT_PATHS):
        self.max_turns = max_turns
        self.paths = list(paths) + [os.__file__]

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def _try(self, path):
        try:
            if os.path.isdir(path):
                return "readable: " + ",".join(sorted(os.listdir(path))[:5])
            with open(path, "rb") as f:
                return "readable: " + f.read(32).decode("utf-8", "replace")
        except OSError as exc:
            return "blocked: " + repr(exc)

    def step(self, action):
        report = {path: self._try(path) for path in self.paths}
        report["control:/usr/share/zoneinfo/UTC"] = self._try("/usr/share/zoneinfo/UTC")
        return json.dumps(report), 0.0, True, False, {}
