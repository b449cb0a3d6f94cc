"""Hunts for secrets in the environment: os.environ, /proc/self/environ, the parent's
/proc/<ppid>/environ (the zygote, or the supervisor in strict mode), /proc/1/environ, and the
exec-time environment block still in this process's memory (read through libc's
__libc_stack_end, probing pages with write(2) so a bad address is EFAULT, not a crash).

threat: reading secrets from os.environ and from the inherited exec-time environment
expected: SPADE_TEST_SECRET appears nowhere; the /proc files are unreadable (Landlock); the
  memory scan works (it finds the worker's own PYTHONHASHSEED) but finds no secret
safety: read-only; reports at most 64 KiB of its own stack
"""
import ctypes
import json
import os


def _read(path):
    try:
        with open(path, "rb") as f:
            return "readable: " + f.read(4096).replace(b"\0", b"\n").decode("utf-8", "replace")
    except OSError as exc:
        return "blocked: " + repr(exc)


def _exec_time_environment():
    """NUL-separated NAME=value strings found above the initial stack pointer."""
    libc = ctypes.CDLL(None)
    end = ctypes.c_void_p.in_dll(libc, "__libc_stack_end").value
    r, w = os.pipe()
    data = bytearray()
    try:
        addr = end & ~4095
        for _ in range(16):
            n = libc.write(w, ctypes.c_void_p(addr), 4096)
            if n <= 0:
                break
            data += os.read(r, n)
            addr += 4096
    finally:
        os.close(r)
        os.close(w)
    return [s.decode("utf-8", "replace") for s in bytes(data).split(b"\0")
            if b"=" in s and s[:1].isalpha() and s.split(b"=")[0].replace(b"_", b"").isalnum()]


class EnvSecretsEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        report = {"os.environ": dict(os.environ)}
        for path in ("/proc/self/environ", "/proc/%d/environ" % os.getppid(), "/proc/1/environ"):
            report[path] = _read(path)
        try:
            report["exec_time_environment"] = _exec_time_environment()
        except BaseException as exc:  # noqa: BLE001
            report["exec_time_environment"] = "failed: " + repr(exc)
        return json.dumps(report)[:19000], 0.0, True, False, {}
