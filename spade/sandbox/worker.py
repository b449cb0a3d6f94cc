"""The sandbox worker: the only code that runs environment programs. Standard library only.

Run by the supervisor as a script, never imported by trusted code:

    python -s -S worker.py zygote CTRL_FD CONFIG_JSON     # fork server (default mode)
    python -s -S worker.py single REQ_FD REP_FD CONFIG_JSON  # strict mode: one fresh interpreter

The zygote pre-imports the modules environments use (after the uid drop the interpreter's files
may be unreadable, as with pyenv under /root), unshares its namespaces once, then forks one child
per session on request. The supervisor sends the child's pipes with the request (SCM_RIGHTS);
the zygote answers with the child's pid and a pidfd, so the supervisor can SIGKILL it without a
pid-reuse race, and later reports how it exited. A child isolates itself (see isolation.py) and
then serves requests: one JSON frame in on fd 3, one JSON frame out on fd 4, stdout and stderr
go to a capture pipe. Nothing here is trusted by the supervisor: it re-validates every reply.

It stays one file of about 550 lines on purpose: everything a sandbox process runs outside the
environment runtime (the fork server, a child's isolation, its request loop, strict mode) is
audited in one place, and the script the supervisor starts imports no sibling but the four
it names below.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import NoReturn

import cgroups
import frames
import isolation
import lifecycle
import runtime

REQ_FD, REP_FD = 3, 4


def _preload(cfg: dict) -> None:
    sys.path.extend(p for p in cfg["sys_path"] if p not in sys.path)
    for name in cfg["preload"]:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - optional modules (numpy, math_verify) may be missing
            pass


# --- serving one environment (child side) ---------------------------------------------------


class _Session:
    def __init__(self, max_frame: int) -> None:
        self.env: object = None
        self.max_frame = max_frame

    def handle(self, req: dict) -> object:
        op = req.get("op")
        if op == "load":
            return self.load(req)
        if self.env is None:
            raise RuntimeError("no environment loaded")
        env = self.env
        if op == "reset":
            try:
                out = env.reset(seed=req.get("seed"))  # type: ignore[attr-defined]
            except TypeError as exc:
                if "seed" not in str(exc):
                    raise
                out = env.reset(req.get("seed"))  # type: ignore[attr-defined]
            return list(out) if isinstance(out, tuple) else out
        if op == "step":
            out = env.step(req["action"])  # type: ignore[attr-defined]
            return list(out) if isinstance(out, tuple) else out
        if op == "tool":
            return env.execute_tool(req["name"], req["args"])  # type: ignore[attr-defined]
        if op == "solution":
            fn = getattr(env, "solution", None)
            return fn() if callable(fn) else None
        if op == "close":
            fn = getattr(env, "close", None)
            if callable(fn):
                fn()
            return None
        raise ValueError(f"unknown op {op!r}")

    def load(self, req: dict) -> object:
        source = req["code"]
        namespace = runtime.build_namespace()
        exec(compile(source, req.get("filename", "<env>"), "exec"), namespace)
        cls = runtime.find_env_class(source, namespace)
        self.env = env = runtime.instantiate(cls, req["max_turns"], req.get("kwargs"))
        is_tool = isinstance(env, runtime.ToolUseBaseEnv)
        return {
            "class": cls.__name__,
            "kind": "tool" if is_tool else "game",
            "tools": env.get_tools() if is_tool else [],
            "has_solution": callable(getattr(env, "solution", None)),
            "max_turns": runtime.turn_cap(env, req["max_turns"]),
        }


def _error(kind: str, exc: BaseException) -> dict:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {
        "ok": False,
        "error": kind,
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "traceback": "".join(tb)[-4000:],
    }


def serve(layers: dict, max_frame: int) -> None:
    session = _Session(max_frame)
    frames.write_all(REP_FD, frames.encode({"op": "hello", "pid": os.getpid(), "layers": layers}))
    while True:
        try:
            req = frames.read_frame(REQ_FD, max_frame)
        except EOFError:
            return
        try:
            reply: dict = {"ok": True, "value": session.handle(req)}
        # SystemExit, KeyboardInterrupt, GeneratorExit and custom BaseExceptions from the
        # environment are failures of that call, reported like any exception (lesson 6).
        except BaseException as exc:  # noqa: BLE001
            reply = _error("exception", exc)
        try:
            data = frames.encode(reply)
        except (TypeError, ValueError, RecursionError) as exc:
            data = frames.encode(_error("unserialisable", exc))
        frames.write_all(REP_FD, data)


# --- isolation of one child -------------------------------------------------------------------


def _place_fds(fds: list[int], targets: list[int], keep: tuple[int, ...]) -> None:
    """dup2 fds onto targets without clobbering, then close everything else above them but the
    `keep` descriptors (each at 10 or above)."""
    high = [os.dup(fd) if fd >= 10 else _dup_high(fd) for fd in fds]
    for fd, target in zip(high, targets):
        os.dup2(fd, target, inheritable=False)
    start = max(targets) + 1
    for fd in sorted(keep):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, os.sysconf("SC_OPEN_MAX"))


def _dup_high(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)


class Prepared:
    """What a sandbox process prepares once, as root, before it isolates: libseccomp, and the
    import paths pinned to descriptors (`_pin_import_paths`; none when not root). The zygote
    prepares them for all its children, which inherit both across the fork."""

    def __init__(self, root: bool) -> None:
        self.seccomp_lib = isolation.load_libseccomp()
        self.pinned_fds = _pin_import_paths() if root else ()


def isolate(cfg: dict, name: str, fds: list[int], cg_parents: dict, prepared: Prepared) -> dict:
    """Apply every per-process layer; returns {layer: None if active else reason}."""
    layers: dict[str, str | None] = {}
    root = os.geteuid() == 0
    isolation.set_parent_death_signal()
    layers["cgroup"] = cgroups.join_cgroup(
        cg_parents, name, cfg["pids_max"], cfg["cgroup_memory_bytes"]
    )
    scratch = os.path.join(cfg["scratch_root"], name)
    os.mkdir(scratch, 0o700)
    if root:
        os.chown(scratch, cfg["uid"], cfg["uid"])
        layers["scratch_quota"] = isolation.private_scratch(scratch, cfg["tmpfs_bytes"], cfg["uid"])
    else:
        layers["scratch_quota"] = "not root: cannot mount a per-worker tmpfs"
    devnull = os.open("/dev/null", os.O_RDWR)
    # fds = [req, rep, out]; targets: 0 stdin, 1 stdout, 2 stderr, 3 requests, 4 replies
    _place_fds([devnull, fds[2], fds[2], fds[0], fds[1]], [0, 1, 2, 3, 4], prepared.pinned_fds)
    os.chdir(scratch)
    lifecycle.use_home(scratch)
    isolation.set_rlimits(cfg["memory_bytes"], cfg["cpu_seconds"], cfg["file_bytes"], cfg["nofile"])
    isolation.prctl(isolation.PR_SET_NO_NEW_PRIVS, 1)
    layers["landlock"] = isolation.apply_landlock(cfg["read_paths"], [scratch, "/dev/null"])
    layers["unprivileged_uid"] = isolation.drop_privileges(cfg["uid"], cfg["uid"])
    if layers["unprivileged_uid"] is None:
        isolation.set_nproc_limit(cfg["nproc"])
    layers["rlimits"] = None
    layers["seccomp"] = isolation.apply_seccomp(prepared.seccomp_lib)  # type: ignore[arg-type]
    return layers


def _pin_import_paths() -> tuple[int, ...]:
    """Keep the standard library importable after the uid drop; returns the descriptors.

    The interpreter may live where the sandbox uid cannot traverse (pyenv under /root, mode 0700;
    SANDBOX.md lesson 8). An O_PATH descriptor opened now, as root, still resolves through
    /proc/self/fd/N afterwards: the import system then reads the same directories (read-only,
    and only those, as Landlock allows) without any path through /root. Packages imported
    before (by the zygote's preload) keep their own search paths and file names: those are
    rewritten too, so their lazily imported submodules (`importlib.resources`, `json.tool`,
    `encodings.unicode_escape`) and their package data are found the same way.

    The zygote does it once for all its children (forked, they inherit the descriptors at the
    same numbers, 10 or above, and the rewritten modules): done in each child, the rewrite of
    every preloaded module cost about half of a session's start (docs/sandbox.md).
    """
    import fcntl

    pinned: dict[str, str] = {}
    for path in sys.path:
        if os.path.isdir(path) and path not in pinned:
            low = os.open(path, os.O_PATH | os.O_DIRECTORY)
            fd = fcntl.fcntl(low, fcntl.F_DUPFD_CLOEXEC, 10)  # clear of a child's fds 0-4
            os.close(low)
            pinned[path] = f"/proc/self/fd/{fd}"
    roots = sorted(pinned, key=len, reverse=True)  # the most specific directory first

    def moved(path: object) -> object:
        if not isinstance(path, str):
            return path
        for root in roots:
            if path == root or path.startswith(root + "/"):
                return pinned[root] + path[len(root) :]
        return path

    sys.path[:] = [moved(p) for p in sys.path]  # type: ignore[misc]
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):
            search[:] = [moved(p) for p in search]
        for owner, attr in (
            (module, "__file__"),
            (getattr(module, "__spec__", None), "origin"),
            (getattr(module, "__loader__", None), "path"),
        ):
            value = getattr(owner, attr, None) if owner is not None else None
            if isinstance(value, str) and moved(value) != value:
                try:
                    setattr(owner, attr, moved(value))
                except (AttributeError, TypeError):
                    pass
    sys.path_importer_cache.clear()
    return tuple(int(p.rsplit("/", 1)[1]) for p in pinned.values())


# --- zygote ---------------------------------------------------------------------------------


def _private_home(cfg: dict) -> None:
    """HOME, XDG_* and MPLCONFIGDIR in the scratch root, before the preload writes any cache."""
    home = os.path.join(cfg["scratch_root"], ".home")
    os.makedirs(home, 0o700, exist_ok=True)
    lifecycle.use_home(home, keep=tuple(os.environ))  # the supervisor's few variables stay


def zygote_main(ctrl_fd: int, cfg: dict) -> None:
    # First of all: the zygote must not outlive its parent. SIGTERM, so it can clean up.
    signal.signal(signal.SIGTERM, lifecycle.raise_on_parent_death)
    cg_parents: dict = {}
    children: dict[int, tuple[int, str]] = {}  # pid -> (own pidfd, name)
    exiting: dict[int, tuple[str, dict, float]] = {}  # reaped: pid -> (name, status, report by)
    leftover: set[str] = set()  # reported workers whose groups the kernel still holds
    zygote, exit_now = os.getpid(), os._exit
    try:
        if lifecycle.guard_parent(cfg["parent_pid"], signal.SIGTERM):
            _zygote(ctrl_fd, cfg, children, exiting, leftover, cg_parents)
    except lifecycle.ParentDied:
        pass
    finally:
        # A dead supervisor both closes the control socket and sends the parent-death SIGTERM:
        # when the socket's end came first, ParentDied can land here, during the cleanup. The
        # handler raises at most once, so the next try runs to the end (every step idempotent).
        while True:
            try:
                if os.getpid() != zygote:  # a forked worker got here: not its cleanup to do
                    exit_now(70)
                names = [name for _own, name in children.values()]
                names += [name for name, _status, _by in exiting.values()] + sorted(leftover)
                _shutdown(children, names, cg_parents, cfg)
                lifecycle.remove_scratch_root(cfg["scratch_root"])
                break
            except lifecycle.ParentDied:
                continue


def _zygote(
    ctrl_fd: int,
    cfg: dict,
    children: dict[int, tuple[int, str]],
    exiting: dict[int, tuple[str, dict, float]],
    leftover: set[str],
    cg_parents: dict,
) -> None:
    """Preload, then fork a worker per request until the supervisor closes the control socket.
    `children`, `exiting`, `leftover` and `cg_parents` are filled in place: the caller cleans
    them up however this ends."""
    ctrl = socket.socket(fileno=ctrl_fd)
    prepared = _start_zygote(ctrl, cfg, cg_parents)
    sel = selectors.DefaultSelector()
    sel.register(ctrl, selectors.EVENT_READ, None)
    zygote_pid = os.getpid()
    exit_now = os._exit  # bound before any environment code runs in a forked child
    counter = 0
    while True:
        _report_exits(ctrl, cfg, cg_parents, exiting, leftover)
        timeout = 0.005 if exiting else 0.05 if leftover else None
        for key, _ in sel.select(timeout):
            if key.data is not None:  # a child exited
                _reap(sel, children, exiting, key.data)
                continue
            try:
                msg, fds, _flags, _addr = socket.recv_fds(ctrl, 65536, 3)
            except OSError:
                msg = b""
            if not msg:  # the supervisor closed the sandbox (or died)
                return
            req = json.loads(msg)
            counter += 1
            name = f"w{counter}"
            # no ParentDied between the fork and the child's entry in `children`: the cleanup
            # would miss a worker it does not know (it would outlive the zygote's cleanup and
            # leave its cgroup behind); a SIGTERM that comes meanwhile is raised after
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            try:
                pid = os.fork()
                if pid == 0:  # never returns
                    _run_worker(cfg, name, fds, cg_parents, prepared, zygote_pid, exit_now)
                _spawned(ctrl, sel, children, pid, name, req, fds)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _start_zygote(ctrl: socket.socket, cfg: dict, cg_parents: dict) -> Prepared:
    """Unshare the namespaces (as root), preload, make the cgroup parents, then tell the
    supervisor the zygote is ready and which of its layers it lacks. Returns what every worker
    inherits prepared."""
    zygote_layers: dict[str, str | None] = {}
    if os.geteuid() == 0:  # before the preload: caches it writes land in the private tmpfs
        zygote_layers.update(isolation.unshare_namespaces(cfg["scratch_root"], cfg["tmpfs_bytes"]))
    else:
        zygote_layers["network_namespace"] = "not root: cannot unshare namespaces"
        zygote_layers["private_tmpfs"] = "not root: cannot mount a private tmpfs"
    _private_home(cfg)
    _preload(cfg)
    namespace = lifecycle.pid_namespace()
    cgroups.sweep_stale_groups(namespace)  # left by sandboxes killed before they cleaned up
    cg_parents.update(cgroups.cgroup_parents(cgroups.group_tag("z", os.getpid(), namespace)))
    prepared = Prepared(root=os.geteuid() == 0)
    ctrl.send(json.dumps({"op": "ready", "pid": os.getpid(), "layers": zygote_layers}).encode())
    return prepared


def _report_exits(
    ctrl: socket.socket,
    cfg: dict,
    cg_parents: dict,
    exiting: dict[int, tuple[str, dict, float]],
    leftover: set[str],
) -> None:
    """Send the "exited" report of each reaped worker whose groups are gone, or that waited long
    enough, and retry removing the groups of those left over."""
    # A reaped worker's cgroup can stay busy for a moment: its "exited" report waits until
    # the groups are gone (or 2 s), so a closed session has left nothing behind. Under load
    # the kernel has held them longer (seen in CI): those are retried until they go.
    for pid, (name, described, report_by) in list(exiting.items()):
        removed = _cleanup(cg_parents, cfg, name)
        if removed or time.monotonic() > report_by:
            del exiting[pid]
            if not removed:
                leftover.add(name)
            report = {"op": "exited", "pid": pid, "status": described}
            try:
                ctrl.send(json.dumps(report).encode())
            except OSError:
                pass
    leftover.difference_update([n for n in list(leftover) if _cleanup(cg_parents, cfg, n)])


def _run_worker(
    cfg: dict,
    name: str,
    fds: list[int],
    cg_parents: dict,
    prepared: Prepared,
    zygote_pid: int,
    exit_now: Callable[[int], NoReturn],
) -> NoReturn:
    """The forked child: isolate itself, serve one session, exit."""
    # The child must never return into the loop, nor reach zygote_main's cleanup:
    # environment code can break the except clause (a patched builtin made
    # traceback.print_exc raise) or replace os._exit, so the exit is bound by the zygote.
    code = 70
    try:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked for the fork
            if not lifecycle.guard_parent(zygote_pid):
                code = 71
            else:
                os.setsid()
                layers = isolate(cfg, name, fds, cg_parents, prepared)
                serve(layers, cfg["max_frame"])
                code = 0
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
    finally:
        exit_now(code)


def _spawned(
    ctrl: socket.socket,
    sel: selectors.BaseSelector,
    children: dict[int, tuple[int, str]],
    pid: int,
    name: str,
    req: dict,
    fds: list[int],
) -> None:
    """In the zygote after a fork: close its copies of the child's pipes, watch the child through
    a pidfd of its own and send the supervisor the child's pid with another pidfd."""
    for fd in fds:
        os.close(fd)
    own = os.pidfd_open(pid)
    theirs = os.pidfd_open(pid)
    children[pid] = (own, name)
    sel.register(own, selectors.EVENT_READ, pid)
    reply = {"op": "spawned", "id": req["id"], "pid": pid}
    socket.send_fds(ctrl, [json.dumps(reply).encode()], [theirs])
    os.close(theirs)


def _reap(
    sel: selectors.BaseSelector,
    children: dict[int, tuple[int, str]],
    exiting: dict[int, tuple[str, dict, float]],
    pid: int,
) -> None:
    """A worker exited: kill what it started, reap it, queue its report for `_report_exits`."""
    own, name = children.pop(pid)
    sel.unregister(own)
    os.close(own)
    # Anything the worker started dies with it. The leader is a zombie until the
    # waitpid below, so its process-group id cannot have been reused yet.
    try:
        os.killpg(pid, 9)
    except OSError:
        pass
    _, wait_status = os.waitpid(pid, 0)
    exiting[pid] = (name, _describe(wait_status), time.monotonic() + 2.0)


def _describe(status: int) -> dict:
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return {"code": os.WEXITSTATUS(status)}


def _cleanup(cg_parents: dict, cfg: dict, name: str) -> bool:
    shutil.rmtree(os.path.join(cfg["scratch_root"], name), ignore_errors=True)
    return cgroups.remove_cgroup(cg_parents, name)


SHUTDOWN_GRACE_S = 8.0
"""How long a closing zygote waits for the kernel to let go of its workers' groups (the
supervisor kills a zygote that has not exited after 10 s)."""


def _shutdown(children: dict, names: list[str], cg_parents: dict, cfg: dict) -> None:
    """Kill every live worker, then remove the groups and scratch folders of `names` (live,
    reaped and left over) and the zygote's own groups, retrying while the kernel holds them."""
    # What the groups hold is the truth, not this process's tables: a worker this zygote does
    # not know (never entered in them) is killed too, and its group removed, or the parent stays.
    pids = set(children)
    for parent in cg_parents.values():
        with contextlib.suppress(OSError):
            for entry in os.scandir(parent):
                if entry.is_dir():
                    names = [*names, entry.name]
                    with open(os.path.join(entry.path, "cgroup.procs")) as f:
                        pids.update(int(line) for line in f if line.strip())
    for pid in pids:  # all killed first, then reaped: they die in parallel
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    for pid in pids:
        with contextlib.suppress(OSError):  # ECHILD: not ours, or already reaped
            os.waitpid(pid, 0)
    names = sorted(set(names))
    deadline = time.monotonic() + SHUTDOWN_GRACE_S
    parents = list(cg_parents.values())
    while True:
        names = [n for n in names if not _cleanup(cg_parents, cfg, n)]
        if not names:
            parents = [p for p in parents if not _rmdir_gone(p)]
        if (not names and not parents) or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _rmdir_gone(path: str) -> bool:
    """Remove an empty folder; True once it is gone."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


# --- strict mode: one fresh interpreter per session -----------------------------------------


def single_main(req_fd: int, rep_fd: int, out_fd: int, cfg: dict) -> None:
    if not lifecycle.guard_parent(cfg["parent_pid"]):
        os._exit(71)
    layers: dict[str, str | None] = {}
    if os.geteuid() == 0:
        layers.update(isolation.unshare_namespaces(cfg["scratch_root"], cfg["tmpfs_bytes"]))
    _private_home(cfg)
    _preload(cfg)
    tag = cgroups.group_tag("s", os.getpid(), lifecycle.pid_namespace())
    cg_parents = cgroups.cgroup_parents(tag)
    try:
        layers.update(
            isolate(cfg, "s", [req_fd, rep_fd, out_fd], cg_parents, Prepared(os.geteuid() == 0))
        )
        serve(layers, cfg["max_frame"])
    finally:
        # groups are emptied by our exit; the supervisor removes them (we may lack the rights now)
        pass


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "zygote":
        zygote_main(int(sys.argv[2]), json.loads(sys.argv[3]))
    elif mode == "single":
        single_main(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
