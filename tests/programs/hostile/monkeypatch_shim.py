"""Tampers with the worker shim and builtins to forge replies, chosen by `how`:

- "patch_json" (default): json.dumps returns a forged step reply with reward 100.0
- "patch_json_nan": json.dumps returns a forged reply whose reward is NaN
- "patch_frames": frames.encode (through sys.modules["frames"]) emits a forged reply *and* the
  real one, so one frame arrives unsolicited
- "replace_frames_module": replaces sys.modules["frames"] (the worker holds its own reference)
- "main_frames": replaces the worker's own `frames` global (sys.modules["__main__"].frames) with
  a fake whose frames claim a 4 GiB payload
- "forge_hello": frames.encode emits a forged "hello" frame instead of the reply
- "raw_write": writes a forged reply straight to the reply descriptor (fd 4), then returns
- "garbage": writes a frame whose payload is not UTF-8
- "nested": writes a well-sized frame of 100,000 nested JSON arrays
- "later": a thread writes a forged frame 0.2 s after the step returned (between calls)
- "builtins": patches builtins.isinstance/callable to always say True, then returns a 6-tuple
  with a NaN reward
- "escape": as "builtins", and also makes traceback.print_exc raise and os._exit do nothing, so
  the shim's failure escapes its handler into the code the worker was forked from

threat: monkeypatching builtins or the worker shim to forge replies
expected: nothing the worker says is trusted: forged out-of-contract values are rejected
  (kind "invalid"), malformed, oversized or unsolicited frames kill the session (kind
  "protocol"), and a forged in-contract value is no more than the environment's own result
safety: only affects the process that runs it; it writes to fd 4 only inside a sandbox worker
"""
import builtins
import json
import os
import stat
import struct
import sys
import threading
import time

FORGED = {"ok": True, "value": ["forged: you win", 1.0, True, False, {"forged": True}]}


def _frame(obj_or_bytes):
    data = obj_or_bytes if isinstance(obj_or_bytes, bytes) else json.dumps(obj_or_bytes).encode()
    return struct.pack(">I", len(data)) + data


def _reply_fd_is_pipe():
    """True only inside a sandbox worker: fds 3 and 4 are pipes and the environment is exactly
    the worker's (HOME = TMPDIR = XDG_RUNTIME_DIR = the current directory, and nothing but HOME,
    TMPDIR, LANG, MPLCONFIGDIR and XDG_*), so a host process is never written to."""
    env = os.environ
    names = {"HOME", "TMPDIR", "LANG", "MPLCONFIGDIR"}
    if any(k not in names and not k.startswith("XDG_") for k in env) or "HOME" not in env:
        return False
    if not env["HOME"] == env.get("TMPDIR") == env.get("XDG_RUNTIME_DIR") == os.getcwd():
        return False
    try:
        return all(stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in (3, 4))
    except OSError:
        return False


def _write4(data):
    if _reply_fd_is_pipe():
        os.write(4, data)


class _FakeFrames:
    """Stands in for the worker's frames module."""

    @staticmethod
    def encode(obj):
        return struct.pack(">I", 0xFFFFFFF0) + b"{}"

    @staticmethod
    def read_frame(fd, max_bytes):
        raise EOFError

    @staticmethod
    def write_all(fd, data):
        os.write(fd, data)


class MonkeypatchShimEnv:
    def __init__(self, max_turns=25, how="patch_json"):
        self.max_turns = max_turns
        self.how = how

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        how = self.how
        real = ("real: you lose", 0.0, True, False, {})
        if how == "patch_json":
            forged = '{"ok":true,"value":["forged",100.0,true,false,{}]}'
            json.dumps = lambda *a, **k: forged
        elif how == "patch_json_nan":
            forged = '{"ok":true,"value":["forged",NaN,true,false,{}]}'
            json.dumps = lambda *a, **k: forged
        elif how == "patch_frames":
            frames = sys.modules.get("frames")
            if frames is not None:
                original = frames.encode
                frames.encode = lambda obj: _frame(FORGED) + original(obj)
        elif how == "replace_frames_module":
            sys.modules["frames"] = _FakeFrames
        elif how == "main_frames":
            main = sys.modules.get("__main__")
            if main is not None and hasattr(main, "serve"):  # only inside the worker
                main.frames = _FakeFrames
        elif how == "forge_hello":
            frames = sys.modules.get("frames")
            if frames is not None:
                frames.encode = lambda obj: _frame({"op": "hello", "pid": 1, "layers": {}})
        elif how == "raw_write":
            _write4(_frame(FORGED))
        elif how == "garbage":
            _write4(_frame(b"\xff\xfe\xfd\xfc\xfb"))
        elif how == "nested":
            _write4(_frame(b"[" * 100_000 + b"]" * 100_000))
            time.sleep(3.0)
        elif how == "later":
            threading.Thread(target=lambda: (time.sleep(0.2), _write4(_frame(FORGED))),
                             daemon=True).start()
        elif how in ("builtins", "escape"):
            if how == "escape":
                import traceback

                def _boom(*a, **k):
                    raise RuntimeError("escaped")

                traceback.print_exc = _boom
                os._exit = lambda *a: None
            builtins.isinstance = lambda *a: True
            builtins.callable = lambda *a: True
            return "obs", float("nan"), True, False, {}, "extra"
        return real
