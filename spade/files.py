"""Atomic file writes: a kill at any point leaves the old file or the new one, never half of one.

    atomic_write_text(run_dir / "state.json", json.dumps(state))
    with atomic_path(out) as tmp:             # for writers that want a path (pyarrow, zip copies)
        pq.write_table(table, tmp)

The new content goes to a uniquely named temporary file beside the target (so writers in several
processes never share one), is flushed to disk (`fsync`), then renamed over the target, and the
directory is synced so the rename itself survives a power loss. On an exception the temporary
file is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path`; when the block ends without an exception, its file is
    synced and renamed over `path`; otherwise it is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    os.chmod(tmp, 0o666 & ~_umask())  # what open() would have made, not mkstemp's 0600
    try:
        yield tmp
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8) atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _umask() -> int:
    """This process's umask, read without changing it (os.umask would race other threads)."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        status = Path("/proc/self/status").read_text().splitlines()
        return int(next(line for line in status if line.startswith("Umask:")).split()[1], 8)
    return 0o022


def _sync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system lets a directory be opened
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
