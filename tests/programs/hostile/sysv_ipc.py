"""Creates System V shared-memory segments (mode "plant"), touches them, detaches and returns;
in mode "probe" it looks the same keys up. Segments are not files, not processes and not
charged to a live cgroup once their creator has exited (a 3 x 64 MiB variant kept 192 MB
of host memory in use after its session closed, until the whole Sandbox closed).

threat: kernel objects that outlive the session (memory left behind; a channel between sessions)
expected: a later session finds none of the segments (each session has its own IPC namespace, or
  SysV IPC is denied)
safety: at most 3 segments of 1 MiB, created with IPC_CREAT|0600 under fixed keys; if run
  outside the sandbox remove them with `ipcrm -M 0x5ade0000` (..01, ..02)
"""
import ctypes
import json

KEY = 0x5ADE0000
SIZE = 1 << 20


class SysvIpcEnv:
    def __init__(self, max_turns=25, mode="plant"):
        self.max_turns = max_turns
        self.mode = mode

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
        libc.shmdt.argtypes = [ctypes.c_void_p]
        report = {}
        for k in range(3):
            if self.mode == "plant":
                sid = libc.shmget(KEY + k, SIZE, 0o1600)
                if sid < 0:
                    report[k] = "shmget failed, errno %d" % ctypes.get_errno()
                    continue
                addr = libc.shmat(sid, None, 0)
                if addr is None or addr == ctypes.c_void_p(-1).value:
                    report[k] = "shmat failed, errno %d" % ctypes.get_errno()
                    continue
                ctypes.memset(addr, 0x5A, SIZE)
                libc.shmdt(addr)
                report[k] = "planted %d" % sid
            else:
                sid = libc.shmget(KEY + k, 0, 0)
                report[k] = ("found %d" % sid) if sid >= 0 else "absent"
        return json.dumps(report), 0.0, True, False, {}
