"""How sandbox processes start and end: private home directories, parent-death guards, cleanup.

Standard library only (run inside the worker script, like isolation.py). The guarantees:

- nothing a worker, the zygote or a preloaded package writes lands in the host's home: `HOME`,
  the XDG base directories, `MPLCONFIGDIR` and `TMPDIR` point into the sandbox's scratch space
  (for the zygote, a private tmpfs that vanishes with it, when it is root);
- no sandbox process outlives the `spade` process that started it, however that one ends: the
  zygote and strict workers get a parent-death signal before they do anything else (and exit at
  once if their parent is already gone); forked workers get one from the zygote; the zygote,
  told of its parent's death, kills its workers and removes the scratch root from /tmp; what
  a sandbox killed with SIGKILL leaves (its scratch root here, its cgroups in cgroups.py) the
  next sandbox removes;
- a Ctrl-C reaches the supervisor's event loop whichever thread the kernel hands it to
  (`wake_loop_on_signals`).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import tempfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

# Standalone (no import of isolation.py), so trusted code can import it as spade.sandbox.lifecycle.
_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1
MNT_DETACH = 2


def private_env(home: str) -> dict[str, str]:
    """The environment of a sandbox process whose home directory is `home`."""
    return {
        "HOME": home,
        "TMPDIR": home,
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
        "XDG_RUNTIME_DIR": home,
        "MPLCONFIGDIR": os.path.join(home, ".config", "matplotlib"),
        "LANG": "C.UTF-8",
    }


def use_home(home: str, keep: tuple[str, ...] = ()) -> None:
    """Replace this process's environment by `private_env(home)` (plus the `keep` variables)."""
    env = private_env(home)
    kept = {k: os.environ[k] for k in keep if k in os.environ and k not in env}
    os.environ.clear()
    os.environ.update(env, **kept)
    tempfile.tempdir = None  # a directory computed before (in the zygote) is not ours


def guard_parent(parent_pid: int, sig: int = signal.SIGKILL) -> bool:
    """Receive `sig` when the parent dies. False if it already has (it died before the prctl):
    the caller must then end."""
    if _libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(sig), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG): {os.strerror(err)}")
    return os.getppid() == parent_pid


class ParentDied(BaseException):
    """Raised in the zygote by its parent-death signal (SIGTERM): clean up, then exit."""


def raise_on_parent_death(signum: int, frame: object) -> None:
    """The zygote's SIGTERM handler. It raises once: later SIGTERMs are ignored, so a cleanup
    interrupted by the one ParentDied can be run again to its end."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise ParentDied()


def remove_scratch_root(path: str) -> None:
    """Remove the scratch root from the host, also from inside the zygote's mount namespace,
    where a private tmpfs covers it (detached first, so the host directory shows)."""
    if sys.platform == "linux" and os.path.ismount(path):
        _libc.umount2(path.encode(), ctypes.c_int(MNT_DETACH))
    shutil.rmtree(path, ignore_errors=True)


SCRATCH_PREFIX = "spade-sandbox-"


def scratch_prefix() -> str:
    """The name a sandbox's scratch root starts with: `spade-sandbox-<pid namespace>-<pid>-`, the
    pid of the `spade` process and the inode of its pid namespace (containers sharing one /tmp
    see different pids: a root from another namespace is never taken for a dead one)."""
    return f"{SCRATCH_PREFIX}{pid_namespace()}-{os.getpid()}-"


def pid_namespace() -> int:
    """The inode of this process's pid namespace (0 where /proc does not tell)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def sweep_scratch_roots(tmp: str) -> int:
    """Remove the scratch roots in `tmp` whose `spade` process is gone and whose zygote could
    not remove them (both killed with SIGKILL, as `ray.kill` does); the number removed. Only
    roots of this pid namespace; a pid in use, even by another program, keeps its root."""
    removed = 0
    try:
        entries = os.listdir(tmp)
    except OSError:
        return 0
    namespace = str(pid_namespace())
    for entry in entries:
        parts = entry[len(SCRATCH_PREFIX) :].split("-")
        if not entry.startswith(SCRATCH_PREFIX) or len(parts) < 3 or parts[0] != namespace:
            continue
        if parts[1].isdigit() and not os.path.exists(f"/proc/{parts[1]}"):
            shutil.rmtree(os.path.join(tmp, entry), ignore_errors=True)
            removed += 1
    return removed


def wake_loop_on_signals(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """Make a signal that any thread receives wake `loop`; the returned call undoes it.

    `asyncio.run` handles Ctrl-C with a plain signal handler and no wakeup fd. When the kernel
    hands SIGINT to an idle executor thread (the sandbox runs blocking waits in one), the handler
    runs only once the main thread's select() returns, which an idle loop may not do for an hour:
    a Ctrl-C seemed ignored. With a wakeup fd the signal writes a byte the loop is reading, the
    loop wakes and the handler runs. Nothing is done off the main thread, or where a wakeup fd
    is already set (`loop.add_signal_handler` sets one)."""
    import contextlib  # here: the workers import this module and need neither
    import socket

    reader, writer = socket.socketpair()
    for sock in (reader, writer):
        sock.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except ValueError:  # not the main thread of the main interpreter
        previous = None
    if previous != -1:  # off the main thread, or someone else's wakeup fd: leave it as it was
        if previous is not None:
            signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
        return lambda: None

    def drain() -> None:
        with contextlib.suppress(OSError):
            while reader.recv(4096):
                pass

    loop.add_reader(reader.fileno(), drain)

    def undo() -> None:
        with contextlib.suppress(ValueError):
            current = signal.set_wakeup_fd(-1)
            if current != writer.fileno():  # set by someone after us: theirs stays
                signal.set_wakeup_fd(current)
        with contextlib.suppress(RuntimeError, ValueError):
            loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()

    return undo
