"""Writes up to 1 GB into its scratch directory ($TMPDIR): first one big file, then many 4 MB
files, and reports how far it got.

threat: disk filling
expected: one file stops at RLIMIT_FSIZE (file_mb, EFBIG), the total stops at the private tmpfs
  size (tmpfs_mb, ENOSPC); nothing reaches the host disk, and the space is free again once the
  session is closed
safety: writes only under $TMPDIR (a scratch directory in the sandbox, /tmp otherwise) and
  deletes everything before returning unless keep=True; capped at 1 GB
"""
import json
import os
import tempfile

MB = 1 << 20


def _fill(path, limit):
    written = 0
    chunk = b"\x00" * MB
    try:
        with open(path, "wb") as f:
            while written < limit:
                f.write(chunk)
                f.flush()
                written += MB
    except OSError as exc:
        return written, type(exc).__name__ + ": " + os.strerror(exc.errno or 0)
    return written, None


class DiskFillEnv:
    def __init__(self, max_turns=25, total_mb=1024, keep=False):
        self.max_turns = max_turns
        self.total_mb = total_mb
        self.keep = keep

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        base = tempfile.mkdtemp(prefix="spade-hostile-disk-", dir=os.environ.get("TMPDIR"))
        report = {"dir": base}
        report["big_file"], report["big_error"] = _fill(os.path.join(base, "big"), 64 * MB)
        if not self.keep:
            os.unlink(os.path.join(base, "big"))
        total, error, i = 0, None, 0
        while total < self.total_mb * MB and error is None:
            n, error = _fill(os.path.join(base, "part%04d" % i), 4 * MB)
            total += n
            i += 1
        report["total"], report["total_error"] = total, error
        if not self.keep:
            for name in os.listdir(base):
                os.unlink(os.path.join(base, name))
            os.rmdir(base)
        return json.dumps(report), 0.0, True, False, {}
