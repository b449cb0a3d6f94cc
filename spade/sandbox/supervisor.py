"""The trusted side of the sandbox: starts workers, talks to them, kills them, checks every reply.

This module holds the `Sandbox`: the zygote it starts, the workers it forks from it (or strict
ones, a fresh interpreter each), the warm pool, and closing it all. A worker's session, the
calls and the checks on every reply, is `Session` in session.py; the limits, records and error
both share are in contract.py.

Threat model. Environment programs are written by a model and are assumed buggy or hostile: they
may loop forever, exhaust memory, processes, file descriptors or disk, read files and environment
variables, open sockets, spawn or signal processes, tamper with the worker's own code, exit in any
way, print floods or fake results, return malformed, huge or non-JSON values, or smuggle objects
whose deserialisation runs code. The sandbox guarantees, for every such program, that

1. it runs only in a separate worker process (never in this interpreter), forked from a small
   zygote that was started with an empty environment, so no secret of the trainer is in its memory;
2. the worker is confined by the layers in `isolation.py`: namespaces (no network), a capped
   private tmpfs, cgroup pids/memory limits, rlimits, an unprivileged uid, Landlock and seccomp;
3. every call has a deadline enforced from the trusted side with SIGKILL (through a pidfd, no pid
   reuse race), and a session has a whole-episode budget; the worker also has a CPU rlimit;
4. only length-prefixed JSON frames cross the boundary, on dedicated pipes, with the size checked
   before the payload is read; stdout/stderr are captured with a cap and never parsed;
5. every reply is re-validated on the trusted side (session.py: types, arity, finiteness, ranges,
   sizes); nothing the worker says about itself is trusted;
6. closing a session or the sandbox leaves no process, cgroup or file behind, and no sandbox
   process outlives this one however it ends (see lifecycle.py): HOME and the XDG directories
   of every sandbox process are in its scratch space, never the host's home.

Not covered: kernel exploits and CPU side channels (run workers in a VM or a container on nodes
without credentials for that), and the wall-clock and CPU an environment may use within its limits.
Where a layer is unavailable on a host, the sandbox runs with the layers it has and reports which
(`Sandbox.layers`, `spade doctor`); `SandboxConfig.require_full_isolation` makes that fatal.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spade.sandbox import lifecycle
from spade.sandbox.contract import SandboxConfig, SandboxError
from spade.sandbox.session import Session

WORKER = str(Path(__file__).with_name("worker.py"))


def strict_preload(preload: tuple[str, ...], code: str) -> tuple[str, ...]:
    """What a fresh interpreter for `code` imports before isolation: the standard library and
    numpy (the namespace has `np`) always, other packages only if the program imports them.
    The zygote imports everything once for all its forks; a fresh interpreter serves one
    program, and math_verify alone made it start 3x slower (0.13 s -> 0.40 s, AMD EPYC), for
    every determinism replay of every program. Code that does not parse keeps the full list."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return preload
    imported = {"numpy"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
    keep = sys.stdlib_module_names | imported
    return tuple(m for m in preload if m.split(".")[0] in keep)


# Shared libraries that C extensions load after isolation (`_sqlite3` needs libsqlite3, `_ssl`
# libssl, `_ctypes` libffi...), and the loader's cache that finds them. Public files: no secret
# lives there, and a symlink out of them (`/usr/lib/ssl/private`) leaves what Landlock allows.
SYSTEM_LIBRARY_PATHS = (
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
    "/usr/share/zoneinfo",
)


def _read_paths() -> list[str]:
    """What a worker may read: the interpreter's own files, site-packages, system libraries."""
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= {os.path.join(p, "lib-dynload") for p in list(paths)}
    return sorted(paths | set(SYSTEM_LIBRARY_PATHS))


def _sys_path() -> list[str]:
    return [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]


SPAWNS_IN_FLIGHT = 32
"""Most fork requests waiting on the zygote at once. Each request is a message on a non-blocking
socket (with three descriptors); with no bound, a `play` of ~1,700 episodes queued more than the
socket's send buffer holds and the send failed with EAGAIN (seen: `benchmarks/headroom.py`, 210
items x 8 samples). Waiting here costs nothing: the zygote forks one worker at a time anyway."""


class Sandbox:
    """Runs environment programs in isolated worker processes. An async context manager:

    async with Sandbox() as sandbox:
        async with await sandbox.open(code) as env:
            obs, info = await env.reset(seed=0)
            result = await env.step("\\\\boxed{3}")
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self.layers: dict[str, str | None] = {}
        self._zygote: subprocess.Popen[bytes] | None = None
        self._ctrl: socket.socket | None = None
        self._spawns: dict[int, asyncio.Future[tuple[int, int]]] = {}
        self._by_pid: dict[int, Session] = {}
        self._sessions: set[Session] = set()
        self._next_id = 0
        self._scratch_root: str | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._idle: list[Session] = []
        self._refill: asyncio.Future[None] | None = None
        self._spawn_gate = asyncio.Semaphore(SPAWNS_IN_FLIGHT)
        self._unwake: Callable[[], None] | None = None

    def _worker_config(
        self, scratch_root: str, preload: tuple[str, ...] | None = None
    ) -> dict[str, Any]:
        c = self.config
        return {
            "scratch_root": scratch_root,
            "tmpfs_bytes": c.tmpfs_mb << 20,
            "memory_bytes": c.memory_mb << 20,
            "cgroup_memory_bytes": c.cgroup_memory_mb << 20,
            "cpu_seconds": c.cpu_seconds,
            "file_bytes": c.file_mb << 20,
            "nofile": c.nofile,
            "nproc": c.nproc,
            "pids_max": c.pids_max,
            "uid": c.uid,
            "max_frame": 64 << 20,  # requests carry code; they come from us
            "read_paths": _read_paths(),
            "sys_path": _sys_path(),
            "preload": list(c.preload if preload is None else preload),
            "parent_pid": os.getpid(),  # the zygote and strict workers die with this process
        }

    @staticmethod
    def _worker_env(hash_seed: int) -> dict[str, str]:
        # Empty environment (SANDBOX.md lesson 1): nothing from ours, only what the worker needs.
        env = {
            "PYTHONHASHSEED": str(hash_seed),
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # correctness flags on some CPUs
            if key in os.environ:
                env[key] = os.environ[key]
        return env

    async def start(self) -> Sandbox:
        if sys.platform != "linux":
            raise RuntimeError("the spade sandbox needs Linux (pidfd, namespaces, seccomp)")
        loop = asyncio.get_running_loop()
        self._unwake = lifecycle.wake_loop_on_signals(loop)  # a Ctrl-C wakes an idle loop
        # named after this process, so a later sandbox can tell a root whose owner is gone
        lifecycle.sweep_scratch_roots(tempfile.gettempdir())
        self._scratch_root = tempfile.mkdtemp(prefix=lifecycle.scratch_prefix())
        os.chmod(self._scratch_root, 0o711)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        cfg = json.dumps(self._worker_config(self._scratch_root))
        self._zygote = subprocess.Popen(
            [sys.executable, "-s", "-S", "-B", WORKER, "zygote", str(theirs.fileno()), cfg],
            pass_fds=[theirs.fileno()],
            env=self._worker_env(0),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        theirs.close()
        ours.setblocking(False)
        self._ctrl = ours
        self._ready = loop.create_future()
        loop.add_reader(ours.fileno(), self._on_ctrl)
        try:
            ready = await asyncio.wait_for(self._ready, 60)
        except (asyncio.TimeoutError, SandboxError):
            await self.aclose()
            raise RuntimeError("the sandbox zygote did not start") from None
        self.layers = dict(ready.get("layers", {}))
        # Per-child layers are reported by a probe worker: what a real session gets.
        probe = await self.open(
            "class ProbeEnv:\n    def reset(self, seed=None): return '', {}\n"
            "    def step(self, a): return '', 0.0, True, False, {}\n"
        )
        self.layers.update(probe.layers)
        await probe.close()
        missing = {k: v for k, v in self.layers.items() if v is not None}
        if missing and self.config.require_full_isolation:
            await self.aclose()
            raise RuntimeError(
                "isolation layers unavailable: "
                + "; ".join(f"{k}: {v}" for k, v in missing.items())
            )
        return self

    def _on_ctrl(self) -> None:
        assert self._ctrl is not None
        while True:
            try:
                msg, fds, _flags, _addr = socket.recv_fds(self._ctrl, 65536, 1)
            except BlockingIOError:
                return
            except OSError:
                msg, fds = b"", []
            if not msg:  # the zygote is gone
                asyncio.get_running_loop().remove_reader(self._ctrl.fileno())
                err = SandboxError("crashed", "sandbox zygote exited")
                for fut in list(self._spawns.values()) + ([self._ready] if self._ready else []):
                    if not fut.done():
                        fut.set_exception(err)
                # its children die with it (parent-death signal): nobody will report them
                for session in self._by_pid.values():
                    if not session.exit_status.done():
                        session.exit_status.set_result({"signal": signal.SIGKILL})
                self._by_pid.clear()
                return
            data = json.loads(msg)
            op = data.get("op")
            if op == "ready" and self._ready is not None and not self._ready.done():
                self._ready.set_result(data)
            elif op == "spawned":
                spawn = self._spawns.pop(data["id"], None)
                if spawn is not None and not spawn.done() and fds:
                    spawn.set_result((data["pid"], fds[0]))
                else:
                    for fd in fds:
                        os.close(fd)
            elif op == "exited":
                exited = self._by_pid.pop(data["pid"], None)
                if exited is not None and not exited.exit_status.done():
                    exited.exit_status.set_result(data["status"])

    async def open(
        self,
        code: str,
        *,
        max_turns: int = 25,
        kwargs: dict[str, Any] | None = None,
        strict: bool = False,
        hash_seed: int = 0,
        filename: str = "<env>",
    ) -> Session:
        """Start a worker and load `code` into it; returns a live session.

        `strict=True` uses a fresh interpreter (with `PYTHONHASHSEED=hash_seed`) instead of a
        fork of the zygote: slower, but nothing is shared with other sessions; it preloads what
        `strict_preload` keeps for `code`.
        Raises SandboxError if the file cannot be executed or its environment constructed.
        """
        session: Session | None = None
        while not strict and self._idle and session is None:
            candidate = self._idle.pop()
            if candidate.alive:
                session = candidate
            else:
                await candidate.close()
        if session is None:
            session = await self._new_session(strict, hash_seed, code)
        if not strict and self.config.warm_workers and self._refill is None:
            self._refill = asyncio.ensure_future(self._refill_idle())
        session.env_seconds = 0.0  # the episode budget starts now, not at the fork
        try:
            await session._load(code, max_turns, kwargs or {}, filename)
        except BaseException:
            await session.close()
            raise
        return session

    async def _new_session(self, strict: bool, hash_seed: int, code: str = "") -> Session:
        session = Session(self, self.config)
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            if strict:
                preload = strict_preload(self.config.preload, code)
                self._spawn_strict(session, hash_seed, preload, req_r, rep_w, out_w)
            else:
                await self._spawn_forked(session, req_r, rep_w, out_w)
        except BaseException:
            for fd in (req_w, rep_r, out_r):
                os.close(fd)
            raise
        finally:
            for fd in (req_r, rep_w, out_w):
                os.close(fd)
        self._sessions.add(session)
        await session._attach(req_w, rep_r, out_r)
        return session

    async def _refill_idle(self) -> None:
        """Keep `warm_workers` forked workers waiting (runs in the background)."""
        try:
            while self._ctrl is not None and len(self._idle) < self.config.warm_workers:
                self._idle.append(await self._new_session(False, 0))
        except SandboxError:
            pass  # the zygote is gone: open() will report it
        finally:
            self._refill = None

    async def _spawn_forked(self, session: Session, req_r: int, rep_w: int, out_w: int) -> None:
        if self._ctrl is None:
            raise SandboxError("closed", "sandbox not started")
        async with self._spawn_gate:
            if self._ctrl is None:
                raise SandboxError("closed", "sandbox closed")
            self._next_id += 1
            spawn_id = self._next_id
            fut: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
            self._spawns[spawn_id] = fut
            socket.send_fds(
                self._ctrl,
                [json.dumps({"op": "spawn", "id": spawn_id}).encode()],
                [req_r, rep_w, out_w],
            )
            try:
                session.pid, session.pidfd = await asyncio.wait_for(
                    fut, self.config.start_timeout_s
                )
            except asyncio.TimeoutError:
                self._spawns.pop(spawn_id, None)
                limit = f"{self.config.start_timeout_s:g} s start deadline"
                raise SandboxError(
                    "timeout", f"the zygote did not fork a worker in the {limit}"
                ) from None
        self._by_pid[session.pid] = session

    def _spawn_strict(
        self,
        session: Session,
        hash_seed: int,
        preload: tuple[str, ...],
        req_r: int,
        rep_w: int,
        out_w: int,
    ) -> None:
        # inside the scratch root: if this process dies, the zygote removes it with the rest
        session._scratch = tempfile.mkdtemp(prefix="spade-strict-", dir=self._scratch_root)
        os.chmod(session._scratch, 0o711)
        cfg = json.dumps(self._worker_config(session._scratch, preload))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-s",
                "-S",
                "-B",
                WORKER,
                "single",
                str(req_r),
                str(rep_w),
                str(out_w),
                cfg,
            ],
            pass_fds=[req_r, rep_w, out_w],
            env=self._worker_env(hash_seed),
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=out_w,
            start_new_session=True,
        )
        session._proc = proc
        session.pid = proc.pid
        session.pidfd = os.pidfd_open(proc.pid)

        def reap() -> None:
            asyncio.get_running_loop().remove_reader(session.pidfd)
            code = proc.wait()
            status = {"signal": -code} if code < 0 else {"code": code}
            if not session.exit_status.done():
                session.exit_status.set_result(status)

        asyncio.get_running_loop().add_reader(session.pidfd, reap)

    async def aclose(self) -> None:
        """Close every session, stop the zygote and remove the scratch root."""
        if self._refill is not None:
            self._refill.cancel()
            with contextlib.suppress(asyncio.CancelledError, SandboxError):
                await self._refill
            self._refill = None
        self._idle.clear()
        # all at once (each close kills its worker before it waits): a Ctrl-C on a busy machine
        # waits once for the slowest exit report, not once per session in turn
        results = await asyncio.gather(
            *(s.close() for s in list(self._sessions)), return_exceptions=True
        )
        if self._ctrl is not None:
            with contextlib.suppress(ValueError, RuntimeError):
                asyncio.get_running_loop().remove_reader(self._ctrl.fileno())
            self._ctrl.close()
            self._ctrl = None
        if self._zygote is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(None, self._zygote.wait, 10)
            except subprocess.TimeoutExpired:
                os.killpg(self._zygote.pid, signal.SIGKILL)
                self._zygote.wait()
            self._zygote = None
        if self._scratch_root is not None:
            shutil.rmtree(self._scratch_root, ignore_errors=True)
            self._scratch_root = None
        if self._unwake is not None:
            self._unwake()
            self._unwake = None
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:  # after the zygote and the scratch root are gone
            raise failed[0]

    async def __aenter__(self) -> Sandbox:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
