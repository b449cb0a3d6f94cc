"""Tries to run programs: os.system, subprocess, os.posix_spawn and finally os.execv (in place
when fork is denied, as in the sandbox; in a child otherwise).

threat: process spawn (subprocess / os.system / exec)
expected: every attempt fails (seccomp denies fork/clone and execve); the canary file that each
  program would create does not exist; the step still answers with the errors
safety: the only program ever run is /bin/touch on the canary path (a unique file under /tmp);
  the process that runs it is never replaced
"""
import json
import os

DEFAULT_CANARY = "/tmp/spade-hostile-spawn-canary"


class ProcessSpawnEnv:
    def __init__(self, max_turns=25, canary=DEFAULT_CANARY):
        self.max_turns = max_turns
        self.canary = canary

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        report = {}
        status = os.system("touch " + self.canary + "-system")
        report["os.system"] = status
        try:
            import subprocess

            done = subprocess.run(["/bin/touch", self.canary + "-subprocess"], timeout=5)
            report["subprocess"] = "ran: %d" % done.returncode
        except BaseException as exc:  # noqa: BLE001
            report["subprocess"] = repr(exc)
        try:
            pid = os.posix_spawn("/bin/touch", ["touch", self.canary + "-posix_spawn"], {})
            os.waitpid(pid, 0)
            report["posix_spawn"] = "ran"
        except OSError as exc:
            report["posix_spawn"] = repr(exc)
        argv = ["touch", self.canary + "-execv"]
        try:
            pid = os.fork()
        except OSError:
            pid = None
        if pid == 0:  # not sandboxed: exec in a child, never replace the caller
            try:
                os.execv("/bin/touch", argv)
            finally:
                os._exit(127)
        elif pid:
            os.waitpid(pid, 0)
            report["execv"] = "ran in a child"
        else:  # fork denied (sandboxed): try to replace this worker with the program
            try:
                os.execv("/bin/touch", argv)
            except OSError as exc:
                report["execv"] = repr(exc)
        return json.dumps(report), 0.0, True, False, {}
