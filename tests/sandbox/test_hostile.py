"""Hostile environments (tests/programs/hostile/) against the sandbox: each test runs one threat and
asserts the safe outcome, that the supervisor survives (a normal environment still plays in the
same Sandbox afterwards) and that nothing is left behind (worker processes, zygote children,
cgroup directories, scratch and canary files, file descriptors of this process).

Every test starts its own Sandbox inside `asyncio.run` (no pytest-asyncio) with short deadlines.
Holes this suite found (host AF_UNIX sockets, SysV IPC, a shared scratch tmpfs, huge-int rewards,
deeply nested replies, non-int tool return codes) are fixed; their tests stay as regressions.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import glob
import json
import math
import os
import pickle
import random
import signal
import socket
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from a checkout without an installed package
    sys.path.insert(0, str(ROOT))

from spade.envs.checks import ValidatorConfig  # noqa: E402
from spade.envs.episode import run_episode  # noqa: E402
from spade.envs.validate import validate  # noqa: E402
from spade.sandbox import Sandbox, SandboxConfig, SandboxError, Session  # noqa: E402
from spade.sandbox.lifecycle import private_env  # noqa: E402
from spade.types import Program  # noqa: E402
from tests.support.preload import LIGHT_PRELOAD  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")

HOSTILE = ROOT / "tests" / "programs" / "hostile"
CGROUP = Path("/sys/fs/cgroup")
TAG = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"  # unique per run: canary and marker names
# No warm worker pool by default, so "every session closed" means "no worker process at all";
# the pool is exercised by the tests that set POOLED.
FAST = SandboxConfig(
    call_timeout_s=1.0,
    load_timeout_s=3.0,
    episode_timeout_s=60.0,
    warm_workers=0,
    preload=LIGHT_PRELOAD,  # no math_verify: a zygote's start ~0.2 s, not ~0.75 s, 52 times
)
POOLED = dataclasses.replace(FAST, warm_workers=SandboxConfig().warm_workers or 2)

NORMAL = '''
"""A normal environment: guess the seed's digit."""
import random


class GuessDigitEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.target = 0

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(0, 9)
        return "Guess a digit 0-9 as \\\\boxed{d}.", {}

    def step(self, action):
        won = action.strip() == "\\\\boxed{%d}" % self.target
        return ("Correct." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}
'''


def code(name: str) -> str:
    return (HOSTILE / f"{name}.py").read_text()


def canary(name: str) -> str:
    return f"/tmp/spade-hostile-{name}-{TAG}"


# --- processes, cgroups, descriptors --------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None and st[1] == pid:
                out.add(int(entry))
    return out


def is_sandbox_process(pid: int) -> bool:
    """A live (or zombie) process running the sandbox worker script, i.e. not a reused pid."""
    try:
        return b"worker.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def cgroup_dirs(*parts: str) -> list[Path]:
    return [CGROUP / ctl / "spade" / Path(*parts) for ctl in ("pids", "memory")]


def _tag(kind: str, pid: int) -> str:
    """A sandbox process's group name (cgroups.group_tag), written out here."""
    return f"{kind}{os.stat('/proc/self/ns/pid').st_ino}-{pid}"


def has_cgroups() -> bool:
    return (CGROUP / "pids" / "spade").is_dir()


class TrackingSandbox(Sandbox):
    """A Sandbox that remembers every worker it starts, so leftovers can be checked."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        super().__init__(config)
        self.workers: list[Session] = []
        self.strict_workers: list[Session] = []

    async def _spawn_forked(self, session: Session, *fds: int) -> None:
        await super()._spawn_forked(session, *fds)
        self.workers.append(session)

    def _spawn_strict(self, session: Session, *args: Any) -> None:
        super()._spawn_strict(session, *args)
        self.workers.append(session)
        self.strict_workers.append(session)


async def wait_dead(session: Session, timeout: float = 3.0) -> dict[str, int]:
    """The worker's exit status, once it is dead (it must die within `timeout`)."""
    return await asyncio.wait_for(asyncio.shield(session.exit_status), timeout)


def cgroup_leaf(pid: int, controller: str) -> str | None:
    """The name of a live worker's own cgroup (w<N>) for one v1 controller."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path.rsplit("/", 1)[-1]
    return None


async def settle(sb: Sandbox, timeout: float = 5.0) -> None:
    """Wait until only idle pool workers are open and the pool is refilled: sessions orphaned by
    a failed gather finish closing, a background refill completes, and every idle worker has
    isolated itself (its hello frame is sent after isolation, its cgroup joined before)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (
        sb._sessions != set(sb._idle)
        or sb._refill is not None
        or not all(s._hello.done() for s in sb._idle)
    ):
        await asyncio.sleep(0.02)


def assert_nothing_left(sb: TrackingSandbox) -> None:
    """Every session closed: no worker process, zygote child, cgroup or scratch file remains
    except the idle workers of the warm pool (which never ran code)."""
    idle = set(sb._idle)
    assert sb._sessions == idle, "the test left sessions open"
    assert all(s.info is None for s in idle), "an idle pool worker has code loaded"
    assert sb._zygote is not None
    zygote = sb._zygote.pid
    idle_pids = {s.pid for s in idle}
    for s in sb.workers:
        if s in idle:
            continue
        assert s.pidfd == -1, f"session of worker {s.pid} was not closed"
        assert not is_sandbox_process(s.pid), f"worker {s.pid} still exists after close"
    assert children(zygote) == idle_pids, "the zygote has children besides idle workers"
    assert sb._scratch_root is not None
    # the host's view of the scratch root: workers write into a tmpfs private to the zygote
    assert os.listdir(sb._scratch_root) == []
    if has_cgroups():
        for controller, parent in zip(("pids", "memory"), cgroup_dirs(_tag("z", zygote))):
            expected = {cgroup_leaf(pid, controller) for pid in idle_pids}

            def leaves(parent: Path = parent) -> set[str]:
                if not parent.exists():
                    return set()
                return {p.name for p in parent.iterdir() if p.is_dir()}

            # The zygote removes a group once the kernel lets go of it, which took over 2 s
            # under load in CI: a group may outlive its session's "exited" report, never the
            # zygote's retries.
            deadline = time.monotonic() + 10.0
            while leaves() != expected and time.monotonic() < deadline:
                time.sleep(0.05)
            assert leaves() == expected, f"cgroups of closed sessions left in {parent}"
        for s in sb.strict_workers:
            for path in cgroup_dirs(_tag("s", s.pid)):
                assert not path.exists(), f"strict worker cgroup {path} left behind"
    for s in sb.strict_workers:
        assert s._scratch is not None and not os.path.exists(s._scratch)
    leftovers = glob.glob(f"/tmp/spade-hostile-*{TAG}*")
    assert leftovers == [], f"files left in /tmp: {leftovers}"


async def assert_survives(sb: Sandbox) -> None:
    """The supervisor still works: a normal environment loads and plays in the same Sandbox."""
    assert sb._zygote is not None and sb._zygote.poll() is None, "the zygote died"
    s = await sb.open(NORMAL)
    try:
        for seed in (3, 4):
            obs, info = await s.reset(seed)
            assert obs.startswith("Guess") and info == {}
            target = random.Random(seed).randint(0, 9)
            result = await s.step(f"\\boxed{{{target}}}")
            assert (result.reward, result.terminated) == (1.0, True)
    finally:
        await s.close()


def run_hostile(
    body: Callable[[TrackingSandbox], Awaitable[Any]], config: SandboxConfig = FAST
) -> Any:
    """Run `body(sandbox)` in a fresh Sandbox, then check survival and that nothing is left."""
    fds_before = open_fds()
    kids_before = children(os.getpid())
    seen: dict[str, Any] = {}

    async def main() -> Any:
        sb = TrackingSandbox(config)
        await sb.start()
        seen["zygote"], seen["scratch"] = sb._zygote, sb._scratch_root
        seen["workers"] = sb.workers
        try:
            result = await body(sb)
            await settle(sb)
            assert_nothing_left(sb)
            await assert_survives(sb)
            await settle(sb)
            assert_nothing_left(sb)
            return result
        finally:
            await sb.aclose()

    result = asyncio.run(main())
    zygote = seen["zygote"]
    assert zygote.returncode is not None, "the zygote outlived Sandbox.aclose()"
    assert not is_sandbox_process(zygote.pid)
    for s in seen["workers"]:
        assert not is_sandbox_process(s.pid)
    if has_cgroups():
        for path in cgroup_dirs(_tag("z", zygote.pid)):
            assert not path.exists(), f"zygote cgroup {path} left behind"
    assert not os.path.exists(seen["scratch"]), "scratch root left behind"
    assert children(os.getpid()) <= kids_before, "child processes left behind"
    assert open_fds() == fds_before, "file descriptors leaked in the supervisor process"
    return result


async def expect_error(call: Awaitable[Any]) -> SandboxError:
    with pytest.raises(SandboxError) as info:
        await call
    return info.value


async def outcome(call: Awaitable[Any]) -> Any:
    """The call's value, or ("SandboxError", kind, message), or ("raised", type name)."""
    try:
        return await call
    except SandboxError as err:
        return ("SandboxError", err.kind, err.message)
    except Exception as exc:  # noqa: BLE001 - a bug: only SandboxError may escape
        return ("raised", type(exc).__name__, str(exc))


def blocked(report: dict[str, Any], *skip: str) -> list[str]:
    """Keys of a fixture's report whose attempt was not blocked."""
    return [
        k
        for k, v in report.items()
        if k not in skip and not (isinstance(v, str) and v.startswith("blocked"))
    ]


# --- fixtures are well-formed -------------------------------------------------------------


def test_fixtures_have_threat_headers() -> None:
    names = sorted(p.stem for p in HOSTILE.glob("*.py"))
    assert len(names) >= 30
    for name in names:
        program = Program.from_code(code(name), source=f"{name}.py")
        assert program.description, name
        assert "threat" in program.metadata and "expected" in program.metadata, name
        assert "safety" in program.metadata, name


def test_leftover_checks_see_live_workers() -> None:
    """The cleanup invariants are not vacuous: while sessions are open they would fail."""

    async def body(sb: TrackingSandbox) -> None:
        assert sb._zygote is not None
        forked = await sb.open(NORMAL)
        strict = await sb.open(NORMAL, strict=True, hash_seed=3)
        try:
            for s in (forked, strict):
                assert is_sandbox_process(s.pid)
            assert forked.pid in children(sb._zygote.pid)
            assert strict.pid in children(os.getpid())
            assert strict._scratch is not None and os.path.isdir(strict._scratch)
            if has_cgroups():
                for parent in cgroup_dirs(_tag("z", sb._zygote.pid)):
                    assert [p for p in parent.iterdir() if p.is_dir()], parent
                for path in cgroup_dirs(_tag("s", strict.pid), "s"):
                    assert path.is_dir(), path
            with pytest.raises(AssertionError, match="sessions open"):
                assert_nothing_left(sb)
        finally:
            await strict.close()
            await forked.close()

    run_hostile(body)


def test_warm_pool_never_reuses_a_hostile_worker() -> None:
    """With the warm pool on, every session gets a fresh worker: what a hostile session did to
    its worker (tampering, timeouts, crashes) never reaches a later session, and closing leaves
    only idle workers that never ran code."""

    async def body(sb: TrackingSandbox) -> None:
        used: list[int] = []
        for name, kwargs in (
            ("monkeypatch_shim", {"how": "patch_json"}),  # patches json.dumps in its worker
            ("loop_step", {}),
            ("memory_bomb", {}),
            ("write_outside", {"tag": TAG, "mode": "plant"}),
        ):
            await settle(sb)
            idle_before = {w.pid for w in sb._idle}
            s = await sb.open(code(name), kwargs=kwargs)
            assert s.pid in idle_before  # served from the pool
            used.append(s.pid)
            try:
                await s.reset(0)
                await outcome(s.step("\\boxed{1}"))
            finally:
                await s.close()
            normal = await sb.open(NORMAL)
            used.append(normal.pid)
            try:
                await normal.reset(5)
                target = random.Random(5).randint(0, 9)
                result = await normal.step(f"\\boxed{{{target}}}")
                assert (result.observation, result.reward) == ("Correct.", 1.0), name
            finally:
                await normal.close()
        assert len(set(used)) == len(used)  # no worker served two sessions
        await settle(sb)
        assert len(sb._idle) == POOLED.warm_workers
        assert not {w.pid for w in sb._idle} & set(used)

    run_hostile(body, POOLED)


# --- infinite loops, slow and broken imports ------------------------------------------------


def test_loop_at_import_times_out() -> None:
    config = dataclasses.replace(FAST, load_timeout_s=1.0)

    async def body(sb: TrackingSandbox) -> None:
        start = time.monotonic()
        err = await expect_error(sb.open(code("loop_import")))
        assert err.kind == "timeout" and "load" in err.message
        assert time.monotonic() - start < 1.0 + 1.5

    run_hostile(body, config)


@pytest.mark.parametrize(
    ("name", "strict"),
    [
        ("loop_reset", False),
        ("loop_step", False),
        ("signal_tamper", False),
        ("signal_tamper", True),
    ],
)
def test_deadline_kills_spinning_env(name: str, strict: bool) -> None:
    """Loops in reset/step, also with SIGTERM/SIGALRM/SIGXCPU ignored: killed at the deadline."""

    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code(name), strict=strict, hash_seed=5)
        try:
            start = time.monotonic()
            if name == "loop_reset":
                err = await expect_error(s.reset(0))
            else:
                await s.reset(0)  # signal_tamper ignores and blocks signals here
                start = time.monotonic()
                err = await expect_error(s.step("\\boxed{1}"))
            elapsed = time.monotonic() - start
            assert err.kind == "timeout" and "deadline" in err.message
            assert 0.9 <= elapsed < 1.0 + 1.5
            assert await wait_dead(s) == {"signal": signal.SIGKILL}
            assert not s.alive
            again = await expect_error(s.step("\\boxed{1}"))
            assert again.kind == "timeout"  # the session stays failed
        finally:
            await s.close()

    run_hostile(body)


def test_slow_import_loads_within_deadline_and_times_out_below_it() -> None:
    async def too_slow(sb: TrackingSandbox) -> None:
        err = await expect_error(sb.open(code("slow_import")))
        assert err.kind == "timeout"

    async def in_time(sb: TrackingSandbox) -> None:
        s = await sb.open(code("slow_import"))
        try:
            await s.reset(0)
            assert (await s.step("\\boxed{1}")).terminated
        finally:
            await s.close()

    run_hostile(too_slow, dataclasses.replace(FAST, load_timeout_s=0.5))
    run_hostile(in_time, dataclasses.replace(FAST, load_timeout_s=4.0))


def test_missing_import_is_a_load_exception() -> None:
    async def body(sb: TrackingSandbox) -> None:
        err = await expect_error(sb.open(code("missing_import")))
        assert err.kind == "exception"
        assert "ModuleNotFoundError" in err.message and "nonexistent_module" in err.message

    run_hostile(body)


# --- resources ------------------------------------------------------------------------------


def test_memory_bomb_dies_alone() -> None:
    async def body(sb: TrackingSandbox) -> None:
        bystander = await sb.open(NORMAL)
        bomb = await sb.open(code("memory_bomb"))
        try:
            await bystander.reset(1)
            await bomb.reset(0)
            err = await expect_error(bomb.step("\\boxed{1}"))
            if err.kind == "crashed":
                assert "SIGKILL" in err.message  # cgroup OOM killer
            else:
                assert err.kind == "exception" and "MemoryError" in err.message
            result = await bystander.step("\\boxed{1}")  # another session is unaffected
            assert result.terminated
        finally:
            await bomb.close()
            await bystander.close()

    run_hostile(body)


def test_fork_bomb_cannot_create_processes() -> None:
    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        s = await sb.open(code("fork_bomb"))
        try:
            await s.reset(0)
            report = json.loads((await s.step("\\boxed{1}")).observation)
            assert children(s.pid) == set()
            await s.step("\\boxed{1}")  # still serving
        finally:
            await s.close()
        return report

    report = run_hostile(body)
    assert report["forks"] == 0 and "PermissionError" in report["fork_error"]
    if has_cgroups():  # pids cgroup: the main thread plus at most pids_max - 1 threads
        assert report["threads"] <= FAST.pids_max - 1
        assert "can't start new thread" in report["thread_error"]


def test_process_spawn_is_denied() -> None:
    base = canary("spawn")

    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        s = await sb.open(code("process_spawn"), kwargs={"canary": base})
        try:
            await s.reset(0)
            report = json.loads((await s.step("\\boxed{1}")).observation)
            assert is_sandbox_process(s.pid)  # execv did not replace the worker
            assert children(s.pid) == set()
        finally:
            await s.close()
        return report

    report = run_hostile(body)
    assert report["os.system"] != 0  # glibc reports a failed spawn as exit status 127
    for key in ("subprocess", "posix_spawn", "execv"):
        assert "PermissionError" in report[key] or "ModuleNotFoundError" in report[key], report
    for suffix in ("system", "subprocess", "posix_spawn", "execv"):
        assert not os.path.exists(f"{base}-{suffix}")


@pytest.mark.parametrize("abi", ["i386", "x32", "native"])
def test_foreign_syscall_abis_cannot_fork(abi: str) -> None:
    async def body(sb: TrackingSandbox) -> Any:
        s = await sb.open(code("syscall_abi"), kwargs={"abi": abi})
        try:
            await s.reset(0)
            result = await outcome(s.step("\\boxed{1}"))
            assert children(s.pid) == set()
            return result
        finally:
            await s.close()

    result = run_hostile(body)
    if isinstance(result, tuple):  # killed for using a foreign syscall table
        assert result[:2] == ("SandboxError", "crashed"), result
        assert "SIGSYS" in result[2] or "SIGSEGV" in result[2], result
    else:
        ret = json.loads(result.observation)["ret"]
        assert ret == "unsupported" or ret < 0, result  # never a child pid
        if abi == "native" and ret != "unsupported":
            assert ret == -1  # EPERM from seccomp


def test_fd_exhaustion_is_capped_and_worker_keeps_answering() -> None:
    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code("fd_exhaustion"))
        try:
            await s.reset(0)
            first = json.loads((await s.step("\\boxed{1}")).observation)
            assert first["held"] < FAST.nofile and "Too many open files" in first["error"]
            second = json.loads((await s.step("\\boxed{1}")).observation)
            assert second["held"] == first["held"]
        finally:
            await s.close()

    run_hostile(body)  # run_hostile also checks this process's descriptors did not leak


def test_disk_fill_is_capped_by_fsize_and_tmpfs() -> None:
    mb = 1 << 20

    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code("disk_fill"), kwargs={"keep": True})
        try:
            await s.reset(0)
            report = json.loads((await s.step("\\boxed{1}")).observation)
        finally:
            await s.close()
        assert report["big_file"] <= FAST.file_mb * mb and "File too large" in report["big_error"]
        assert report["total"] <= FAST.tmpfs_mb * mb
        assert "No space left" in report["total_error"]
        # closing the session freed its scratch space: a new session can fill a file again
        s = await sb.open(code("disk_fill"), kwargs={"total_mb": 4})
        try:
            await s.reset(0)
            again = json.loads((await s.step("\\boxed{1}")).observation)
            assert again["big_file"] == FAST.file_mb * mb and again["total"] == 4 * mb
        finally:
            await s.close()

    run_hostile(body)


def test_disk_fill_does_not_starve_concurrent_sessions() -> None:
    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        hog = await sb.open(code("disk_fill"), kwargs={"keep": True})
        victim = await sb.open(code("disk_fill"), kwargs={"total_mb": 1})
        try:
            await hog.reset(0)
            await hog.step("\\boxed{1}")
            await victim.reset(0)
            return json.loads((await victim.step("\\boxed{1}")).observation)
        finally:
            await victim.close()
            await hog.close()

    report = run_hostile(body)
    assert report["total_error"] is None and report["total"] >= 1 << 20, report


def test_output_flood_is_capped_and_drained() -> None:
    config = dataclasses.replace(FAST, call_timeout_s=10.0)

    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code("output_flood"))
        try:
            await s.reset(0)
            result = await s.step("\\boxed{1}")
            assert result.observation == "flooded"
            total = 101 * len(("flood " * 20 + "\n") * 8000)
            deadline = time.monotonic() + 3.0
            while len(s._output.kept) + s._output.dropped < total and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert len(s._output.kept) == config.max_output_bytes
            assert s._output.dropped == total - config.max_output_bytes  # drained, not blocked
            assert s.output.endswith("bytes dropped]")
            assert (await s.step("\\boxed{1}")).observation == "flooded"
        finally:
            await s.close()

    run_hostile(body, config)


def test_sysv_ipc_does_not_outlive_session() -> None:
    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        planter = await sb.open(code("sysv_ipc"), kwargs={"mode": "plant"})
        try:
            await planter.reset(0)
            planted = json.loads((await planter.step("\\boxed{1}")).observation)
        finally:
            await planter.close()
        probe = await sb.open(code("sysv_ipc"), kwargs={"mode": "probe"})
        try:
            await probe.reset(0)
            found = json.loads((await probe.step("\\boxed{1}")).observation)
        finally:
            await probe.close()
        return {"planted": planted, "found": found}

    report = run_hostile(body)
    assert all(v == "absent" for v in report["found"].values()), report


# --- network, files, secrets, signals --------------------------------------------------------


def _listeners() -> tuple[socket.socket, socket.socket]:
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    tcp.setblocking(False)
    udp.setblocking(False)
    return tcp, udp


def _received(tcp: socket.socket, udp: socket.socket) -> list[bytes]:
    got = []
    with contextlib.suppress(BlockingIOError):
        conn, _ = tcp.accept()
        conn.settimeout(1.0)
        with conn:
            got.append(b"tcp:" + conn.recv(64))
    with contextlib.suppress(BlockingIOError):
        got.append(b"udp:" + udp.recv(64))
    return got


def _run_unsandboxed(name: str, **kwargs: Any) -> Any:
    """Positive control: the fixture's own code, in this process, without any sandbox."""
    namespace: dict[str, Any] = {"__name__": "hostile_control"}
    exec(compile(code(name), f"{name}.py", "exec"), namespace)
    cls = next(v for k, v in namespace.items() if k.endswith("Env") and isinstance(v, type))
    env = cls(**kwargs)
    env.reset(0)
    return env.step("\\boxed{1}")


def test_network_is_unreachable() -> None:
    tcp, udp = _listeners()
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f"\0spade-listener-{TAG}"  # abstract namespace: per network namespace
    abstract.bind(abstract_name)
    abstract.listen(1)
    abstract.setblocking(False)
    try:
        local = {
            "tcp_local": ["127.0.0.1", tcp.getsockname()[1]],
            "udp_local": ["127.0.0.1", udp.getsockname()[1]],
        }
        targets = dict(
            local,
            tcp_external=["1.1.1.1", 80],
            udp_external=["8.8.8.8", 53],
            tcp6_local=["::1", tcp.getsockname()[1]],
        )

        async def body(sb: TrackingSandbox) -> dict[str, Any]:
            s = await sb.open(
                code("network"), kwargs={"targets": targets, "unix_paths": [abstract_name]}
            )
            try:
                await s.reset(0)
                return json.loads((await s.step("\\boxed{1}")).observation)
            finally:
                await s.close()

        report = run_hostile(body)
        assert blocked(report) == [], report
        assert _received(tcp, udp) == []
        with pytest.raises(BlockingIOError):
            abstract.accept()
        # positive control: the same code reaches the same listeners when not sandboxed
        control = json.loads(
            _run_unsandboxed("network", targets=local, dns=False, unix_paths=[abstract_name])[0]
        )
        assert control["tcp_local"].startswith("reached"), control
        assert control["unix_0"].startswith("reached"), control
        assert sorted(_received(tcp, udp)) == [b"tcp:hostil", b"udp:hostil"]
        abstract.accept()[0].close()
    finally:
        tcp.close()
        udp.close()
        abstract.close()


def test_host_unix_sockets_are_unreachable() -> None:
    path = f"/tmp/spade-listener-{TAG}.sock"
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        stream.bind(path)
        stream.listen(1)
        dgram.bind(path + ".dgram")
        for p in (path, path + ".dgram"):
            os.chmod(p, 0o777)  # like /dev/log or /tmp/.X11-unix/X0
        stream.setblocking(False)
        dgram.setblocking(False)

        async def body(sb: TrackingSandbox) -> dict[str, Any]:
            s = await sb.open(
                code("network"),
                kwargs={"targets": {}, "dns": False, "unix_paths": [path, path + ".dgram"]},
            )
            try:
                await s.reset(0)
                return json.loads((await s.step("\\boxed{1}")).observation)
            finally:
                await s.close()

        report = run_hostile(body)
        got = []
        with contextlib.suppress(BlockingIOError):
            conn, _ = stream.accept()
            with conn:
                conn.settimeout(1.0)
                got.append(conn.recv(64))
        with contextlib.suppress(BlockingIOError):
            got.append(dgram.recv(64))
    finally:
        stream.close()
        dgram.close()
        for p in (path, path + ".dgram"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)
    assert got == [], f"host listener received {got}; report {report}"
    assert blocked(report) == [], report


@pytest.mark.parametrize("mode", ["forked", "pooled", "strict"])
def test_secrets_are_not_reachable(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    strict = mode == "strict"
    decoy = f"decoy-{uuid.uuid4().hex}"
    monkeypatch.setenv("SPADE_TEST_SECRET", decoy)  # in this process's env before the Sandbox

    async def body(sb: TrackingSandbox) -> tuple[dict[str, Any], str]:
        s = await sb.open(code("env_secrets"), strict=strict, hash_seed=7)
        try:
            await s.reset(0)
            observation = (await s.step("\\boxed{1}")).observation
            return json.loads(observation), observation + s.output
        finally:
            await s.close()

    report, everything = run_hostile(body, POOLED if mode == "pooled" else FAST)
    assert decoy not in everything and "SPADE_TEST_SECRET" not in everything
    assert set(report["os.environ"]) <= set(private_env("/scratch"))  # HOME, XDG_*, TMPDIR...
    proc = [k for k in report if k.startswith("/proc/")]
    assert len(proc) == 3 and blocked(report, "os.environ", "exec_time_environment") == [], report
    if strict:  # the strict worker's parent is this process, which does hold the secret
        assert f"/proc/{os.getpid()}/environ" in report
    # the memory scan works (positive control) and finds only the worker's own environment
    found = report["exec_time_environment"]
    assert f"PYTHONHASHSEED={7 if strict else 0}" in found, found
    assert not any(s.startswith("SPADE_TEST_SECRET") for s in found)


def test_host_files_are_unreadable() -> None:
    paths = [
        "/etc/shadow",
        "/etc/passwd",
        "/root",
        *(["/home"] if os.path.isdir("/home") else []),
        "/proc/1/cmdline",
        "/proc/1/environ",
        str(Path(__file__).resolve()),
        str(ROOT),
        str(ROOT / "pyproject.toml"),
    ]

    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        s = await sb.open(code("read_host_files"), kwargs={"paths": paths})
        try:
            await s.reset(0)
            return json.loads((await s.step("\\boxed{1}")).observation)
        finally:
            await s.close()

    report = run_hostile(body)
    control = report.pop("control:/usr/share/zoneinfo/UTC")
    assert control.startswith("readable: TZif")  # the fixture can read what is allowed
    # the interpreter's own os.py (as the worker's `os.__file__` names it) is one of the
    # read-only paths imports need; everything else stays blocked
    (own,) = [k for k in report if k.endswith("/os.py") and k not in paths]
    assert report.pop(own).startswith("readable: ")
    assert blocked(report) == [], report
    assert len(report) == len(paths)
    with contextlib.suppress(OSError):
        shadow = Path("/etc/shadow").read_bytes()[:16].decode("utf-8", "replace")
        assert not shadow or shadow not in json.dumps(report)


def test_writes_outside_scratch_fail_and_sessions_cannot_see_each_other() -> None:
    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        planter = await sb.open(code("write_outside"), kwargs={"tag": TAG, "mode": "plant"})
        try:
            await planter.reset(0)
            planted = await planter.step("\\boxed{1}")
            assert planted.observation == "written"
            escaper = await sb.open(code("write_outside"), kwargs={"tag": TAG})
            try:
                await escaper.reset(0)
                report = json.loads((await escaper.step("\\boxed{1}")).observation)
            finally:
                await escaper.close()
        finally:
            await planter.close()
        assert report["cwd"] != planted.info["cwd"]
        return report

    report = run_hostile(body)  # also asserts no /tmp/spade-hostile-*<TAG>* file exists
    assert report.pop("control:scratch") == "written"
    assert report.pop("siblings") == []
    report.pop("cwd")
    assert blocked(report) == [], report
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not glob.glob(os.path.join(d, f"spade-hostile-write-{TAG}*"))


@pytest.mark.parametrize("mode", ["forked", "pooled", "strict"])
def test_signals_cannot_leave_the_sandbox(mode: str) -> None:
    strict = mode == "strict"
    received: list[int] = []
    previous = signal.signal(signal.SIGURG, lambda signum, frame: received.append(signum))

    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        # forked: the parent is the zygote, sent SIGKILL; strict: the parent is this process
        kwargs = {"target_pid": os.getpid(), "lethal": not strict}
        s = await sb.open(code("signal_parent"), kwargs=kwargs, strict=strict)
        try:
            await s.reset(0)
            report = json.loads((await s.step("\\boxed{1}")).observation)
        finally:
            await s.close()
        await asyncio.sleep(0.1)
        assert sb._zygote is not None and sb._zygote.poll() is None, "the zygote was killed"
        return report

    try:
        report = run_hostile(body, POOLED if mode == "pooled" else FAST)
    finally:
        signal.signal(signal.SIGURG, previous)
    assert received == [], "a signal from the worker reached the supervisor"
    assert report.pop("kill(self, 0)") == "delivered"  # the fixture can signal itself
    parent = report.pop("parent")
    assert (parent == os.getpid()) == strict
    assert blocked(report) == [], report


# --- exits and exceptions --------------------------------------------------------------------


def test_every_way_out_is_reported() -> None:
    caught = {
        "sys_exit": "SystemExit",
        "keyboard_interrupt": "KeyboardInterrupt",
        "generator_exit": "GeneratorExit",
        "custom_base": "HostileBaseError",
    }
    died = {"os_exit": "exited with status 0", "abort": "SIGABRT"}

    async def body(sb: TrackingSandbox) -> None:
        for when in ("step", "reset"):
            for how, name in {**caught, **died}.items():
                s = await sb.open(code("exits"), kwargs={"how": how, "when": when})
                try:
                    if when == "step":
                        await s.reset(0)
                        err = await expect_error(s.step("\\boxed{1}"))
                    else:
                        err = await expect_error(s.reset(0))
                    if how in caught:
                        assert err.kind == "exception" and name in err.message, (how, err)
                        if when == "step":  # the worker survived and keeps serving
                            assert (await s.step("\\boxed{survive}")).observation == "still here"
                    else:
                        assert err.kind == "crashed" and name in err.message, (how, err)
                        assert not s.alive
                finally:
                    await s.close()

    run_hostile(body)


def test_segfault_is_a_crash() -> None:
    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code("segfault"))
        try:
            await s.reset(0)
            err = await expect_error(s.step("\\boxed{1}"))
            assert err.kind == "crashed" and "SIGSEGV" in err.message
            assert await wait_dead(s) == {"signal": signal.SIGSEGV}
        finally:
            await s.close()

    run_hostile(body)


def test_threads_left_running_die_with_the_session() -> None:
    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code("threads_left"))
        pid = s.pid
        try:
            obs, _ = await s.reset(0)
            assert obs.endswith("Threads: 3")
            assert (await s.step("\\boxed{1}")).info == {"alive": 3}
            await asyncio.sleep(0.1)
            assert "thread still alive" in s.output
        finally:
            start = time.monotonic()
            await s.close()
            assert time.monotonic() - start < 1.0  # close does not wait for the threads
        assert not is_sandbox_process(pid)
        printed = s.output
        await asyncio.sleep(0.2)
        assert s.output == printed

    run_hostile(body)


# --- malformed results -----------------------------------------------------------------------


async def _step_errors(
    sb: Sandbox, name: str, key: str, modes: dict[str, str]
) -> dict[str, tuple[str, str]]:
    """{mode: (kind, message)} of the first failing call for each mode."""
    out = {}
    for mode, _kind in modes.items():
        s = await sb.open(code(name), kwargs={key: mode})
        try:
            if mode.startswith("reset"):
                err = await expect_error(s.reset(0))
            else:
                await s.reset(0)
                err = await expect_error(s.step("\\boxed{1}"))
            out[mode] = (err.kind, err.message)
        finally:
            await s.close()
    return out


@pytest.mark.parametrize(
    ("name", "key", "modes"),
    [
        (
            "huge_observation",
            "size",
            {"over_limit": "invalid", "frame": "protocol", "info": "protocol"},
        ),
        (
            "non_json",
            "kind",
            {
                "set_obs": "invalid",
                "object_info": "invalid",
                "bytes_info": "invalid",
                "set_info": "invalid",
                "generator": "invalid",
                "cycle": "invalid",
            },
        ),
        (
            "bad_reward",
            "reward",
            {
                "nan": "invalid",
                "inf": "invalid",
                "-inf": "invalid",
                "str": "invalid",
                "bool": "invalid",
                "none": "invalid",
                "out_of_range": "invalid",
            },
        ),
        (
            "wrong_types",
            "field",
            {
                "terminated_int": "invalid",
                "truncated_str": "invalid",
                "info_list": "invalid",
                "obs_int": "invalid",
                "obs_none": "invalid",
                "reset_info_str": "invalid",
            },
        ),
        (
            "wrong_arity",
            "shape",
            {
                "step4": "invalid",
                "step6": "invalid",
                "reset3": "invalid",
                "reset_str": "invalid",
                "step_dict": "invalid",
                "step_none": "invalid",
            },
        ),
    ],
)
def test_malformed_results_are_rejected(name: str, key: str, modes: dict[str, str]) -> None:
    async def body(sb: TrackingSandbox) -> dict[str, tuple[str, str]]:
        return await _step_errors(sb, name, key, modes)

    errors = run_hostile(body)
    assert {m: k for m, (k, _) in errors.items()} == modes, errors
    for kind, message in errors.values():
        if kind == "protocol":
            assert "exceeds" in message and "cap" in message  # refused before buffering


def test_huge_integer_reward_is_invalid() -> None:
    async def body(sb: TrackingSandbox) -> Any:
        s = await sb.open(code("bad_reward"), kwargs={"reward": "bigint"})
        try:
            await s.reset(0)
            return await outcome(s.step("\\boxed{1}"))
        finally:
            await s.close()

    result = run_hostile(body)
    assert result[:2] == ("SandboxError", "invalid"), result


def test_validate_does_not_raise_on_huge_integer_reward() -> None:
    program = Program.from_code(code("bad_reward").replace('reward="nan"', 'reward="bigint"'))

    async def body(sb: TrackingSandbox) -> Any:
        verdict = await outcome(validate(program, sb, ValidatorConfig(probe_seeds=2)))
        await settle(sb)
        return verdict

    verdict = run_hostile(body)
    assert not isinstance(verdict, tuple), verdict
    assert "contract" in {f.check for f in verdict.failures}


def test_tool_contract_violations_are_rejected() -> None:
    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        out = {}
        for how in ("returncode_2", "output_int", "no_output"):
            s = await sb.open(code("tool_bad_returns"), kwargs={"how": how})
            try:
                assert s.info is not None and s.info.kind == "tool"
                await s.reset(0)
                out[how] = await outcome(s.call_tool("lookup", {"key": "a"}))
            finally:
                await s.close()
        return out

    results = run_hostile(body)
    assert all(r[:2] == ("SandboxError", "invalid") for r in results.values()), results


def test_tool_returncode_must_be_an_int() -> None:
    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        out = {}
        for how in ("bool_returncode", "float_returncode"):
            s = await sb.open(code("tool_bad_returns"), kwargs={"how": how})
            try:
                await s.reset(0)
                out[how] = await outcome(s.call_tool("lookup", {"key": "a"}))
            finally:
                await s.close()
        return out

    results = run_hostile(body)
    assert all(r[:2] == ("SandboxError", "invalid") for r in results.values()), results


# --- forged results, pickles, lies -----------------------------------------------------------


def test_forged_replies_from_a_tampered_shim() -> None:
    real = ("real: you lose", 0.0)
    forged = ("forged: you win", 1.0)  # in contract: no more than the env's own claim

    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for how in (
            "patch_json",
            "patch_json_nan",
            "patch_frames",
            "replace_frames_module",
            "main_frames",
            "forge_hello",
            "raw_write",
            "garbage",
            "later",
            "builtins",
        ):
            s = await sb.open(code("monkeypatch_shim"), kwargs={"how": how})
            try:
                await s.reset(0)
                start = time.monotonic()
                first = await outcome(s.step("\\boxed{1}"))
                elapsed = time.monotonic() - start
                await asyncio.sleep(0.4)  # "later" forges a frame 0.2 s after the step
                second = await outcome(s.step("\\boxed{1}"))
                seen[how] = (first, second, elapsed, s.alive)
            finally:
                await s.close()
        return seen

    seen = run_hostile(body)

    def value(r: Any) -> Any:
        return None if isinstance(r, tuple) else (r.observation, r.reward)

    def kind(r: Any) -> Any:
        return r[1] if isinstance(r, tuple) and r[0] == "SandboxError" else None

    for how, (first, second, elapsed, _alive) in seen.items():
        for r in (first, second):
            assert not (isinstance(r, tuple) and r[0] == "raised"), (how, r)
            if value(r) is not None:  # anything accepted is in contract
                assert value(r) in (real, forged), (how, r)
                assert math.isfinite(r.reward) and abs(r.reward) <= FAST.reward_bound
        assert elapsed < FAST.call_timeout_s, (how, elapsed)  # rejected at once, not at a deadline
    assert kind(seen["patch_json"][0]) == "invalid"  # reward 100.0
    assert kind(seen["patch_json_nan"][0]) == "invalid"
    for how in ("patch_frames", "raw_write"):
        first, second, _, alive = seen[how]
        assert value(first) == forged and kind(second) == "protocol" and not alive, seen[how]
    assert value(seen["replace_frames_module"][0]) == real  # the worker keeps its own module
    assert value(seen["replace_frames_module"][1]) == real
    assert kind(seen["main_frames"][0]) == "protocol"  # a 4 GiB frame header: refused
    assert kind(seen["forge_hello"][0]) == "protocol"
    assert kind(seen["garbage"][0]) == "protocol"
    assert value(seen["later"][0]) == real and kind(seen["later"][1]) == "protocol"
    assert kind(seen["builtins"][0]) in ("invalid", "crashed")


def test_a_worker_that_breaks_its_own_error_handling_only_ends_itself() -> None:
    """A worker is a fork of the zygote: an exception that escapes the worker's handler (here the
    environment broke traceback.print_exc and os._exit) once ran the zygote's own shutdown in the
    worker, which tried to kill and clean up every sibling session for seconds."""

    async def body(sb: TrackingSandbox) -> tuple[Any, float, Any]:
        sibling = await sb.open(NORMAL)
        s = await sb.open(code("monkeypatch_shim"), kwargs={"how": "escape"})
        try:
            await sibling.reset(3)
            await s.reset(0)
            start = time.monotonic()
            result = await outcome(s.step("\\boxed{1}"))
            elapsed = time.monotonic() - start
            await asyncio.sleep(0.3)
            after = await outcome(sibling.step("\\boxed{1}"))
            return result, elapsed, after
        finally:
            await s.close()
            await sibling.close()

    result, elapsed, after = run_hostile(body)
    assert result[:2] == ("SandboxError", "crashed"), result
    assert elapsed < FAST.call_timeout_s, elapsed  # it exits at once
    assert not isinstance(after, tuple), after  # the sibling still plays
    assert after.observation in ("Correct.", "Wrong."), after


def test_deeply_nested_reply_is_a_protocol_error() -> None:
    async def body(sb: TrackingSandbox) -> tuple[Any, float]:
        s = await sb.open(code("monkeypatch_shim"), kwargs={"how": "nested"})
        try:
            await s.reset(0)
            start = time.monotonic()
            result = await outcome(s.step("\\boxed{1}"))
            return result, time.monotonic() - start
        finally:
            await s.close()

    result, elapsed = run_hostile(body)
    assert result[:2] == ("SandboxError", "protocol"), result
    assert elapsed < FAST.call_timeout_s / 2


def test_pickle_payloads_are_never_unpickled(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def trap(name: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            raise AssertionError(f"the supervisor called pickle.{name}")

        return refuse

    for name in ("loads", "load", "Unpickler"):
        monkeypatch.setattr(pickle, name, trap(name))
    base = canary("pickle")

    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        out = {}
        for how in ("reduce_object", "pickle_bytes", "pickle_text", "numpy_lookalike"):
            s = await sb.open(code("pickle_payload"), kwargs={"canary": base, "how": how})
            try:
                await s.reset(0)
                out[how] = await outcome(s.step("\\boxed{1}"))
            finally:
                await s.close()
        return out

    results = run_hostile(body)
    assert calls == []
    for how in ("reduce_object", "pickle_bytes", "numpy_lookalike"):
        assert results[how][:2] == ("SandboxError", "invalid"), results[how]
    info = results["pickle_text"].info
    assert info["format"] == "pickle" and all(isinstance(v, str) for v in info.values())
    assert not os.path.exists(base) and not os.path.exists(base + "-item")


def test_fake_results_on_stdout_are_ignored() -> None:
    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code("fake_stdout"))  # __init__ prints a fake hello and reply
        try:
            await s.reset(0)
            result = await s.step("\\boxed{1}")
            assert (result.observation, result.reward) == ("You lose.", 0.0)
            await asyncio.sleep(0.05)
            assert '"You win!"' in s.output and '"op": "hello"' in s.output
            episode = await run_episode(s, lambda t, o: "\\boxed{1}", seed=0, max_turns=3)
            assert episode.return_ == 0.0 and not episode.won
        finally:
            await s.close()

    run_hostile(body)


def test_reward_claims_in_info_do_not_count() -> None:
    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code("info_reward_claim"))
        try:
            episode = await run_episode(s, lambda t, o: "\\boxed{1}", seed=0, max_turns=5)
            assert episode.terminated and episode.return_ == 0.0 and not episode.won
            result = await s.step("\\boxed{2}")
            assert result.reward == 0.0 and result.info["won"] is True  # passed on as inert data
        finally:
            await s.close()

    run_hostile(body)


def test_never_terminating_episode_is_truncated_by_the_runtime() -> None:
    async def body(sb: TrackingSandbox) -> None:
        s = await sb.open(code("never_terminates"), max_turns=5)
        try:
            episode = await run_episode(s, lambda t, o: "\\boxed{next}", seed=0, max_turns=5)
            assert len(episode.turns) == 5 and episode.truncated and not episode.terminated
            assert episode.return_ == 0.0
        finally:
            await s.close()

    run_hostile(body)


def test_eval_of_the_action_stays_inside_the_sandbox() -> None:
    target = canary("eval")

    async def body(sb: TrackingSandbox) -> dict[str, str]:
        s = await sb.open(code("eval_action"))
        out = {}
        try:
            for label, expr in {
                "system": f"__import__('os').system('touch {target}')",
                "open": f"open('{target}', 'w').write('x')",
                "shadow": "open('/etc/shadow').read()",
                "socket": "__import__('socket').socket(2, 1).connect(('1.1.1.1', 80))",
                "kill": "__import__('os').kill(__import__('os').getppid(), 9)",
            }.items():
                await s.reset(0)
                out[label] = (await s.step(f"\\boxed{{{expr}}}")).observation
            obs, _ = await s.reset(1)  # still a working calculator
            a, b = (int(x) for x in obs.split("Compute ")[1].split(";")[0].split(" * "))
            assert (await s.step(f"\\boxed{{{a} * {b}}}")).reward == 1.0
        finally:
            await s.close()
        return out

    out = run_hostile(body)
    assert out["system"] != "= 0"  # the shell never ran
    for label in ("open", "shadow", "socket", "kill"):
        assert out[label].startswith("error:") and "Error" in out[label], out
    assert not os.path.exists(target)


def test_fork_hides_hash_order_but_strict_workers_expose_it() -> None:
    async def body(sb: TrackingSandbox) -> tuple[list[str], list[str]]:
        forked, strict = [], []
        for hash_seed in (1, 2):
            for mode, into in ((False, forked), (True, strict)):
                s = await sb.open(code("nondeterministic_hash"), strict=mode, hash_seed=hash_seed)
                try:
                    into.append((await s.reset(0))[0])
                finally:
                    await s.close()
        return forked, strict

    forked, strict = run_hostile(body)
    assert forked[0] == forked[1]  # every fork shares the zygote's hash seed (lesson 2)
    assert strict[0] != strict[1]


# --- the validator's verdicts ----------------------------------------------------------------

VERDICTS = {  # fixture -> the checks that must be among its failures (any one of a tuple)
    "loop_import": ("load",),
    "loop_reset": ("resource",),
    "loop_step": ("resource",),
    "signal_tamper": ("resource",),
    "missing_import": ("load",),
    "memory_bomb": ("resource", "exception"),
    "segfault": ("resource",),
    "syscall_abi": ("resource",),
    "exits": ("exception",),
    "huge_observation": ("contract",),
    "non_json": ("contract",),
    "bad_reward": ("contract",),
    "wrong_types": ("contract",),
    "wrong_arity": ("contract",),
    "monkeypatch_shim": ("contract",),
    "pickle_payload": ("contract",),
    "nondeterministic_time": ("determinism",),
    "nondeterministic_hash": ("determinism",),
    "always_pays": ("not_trivial",),
    "never_terminates": ("termination",),
    "scaffold_loop_generate": ("resource",),
    "scaffold_bad_values": ("exception", "contract"),
    "scaffold_bad_move": ("exception", "contract"),
    "scaffold_tamper": ("not_trivial",),
}


@pytest.mark.slow
def test_validator_rejects_hostile_fixtures() -> None:
    config = dataclasses.replace(FAST, load_timeout_s=1.5)
    vcfg = ValidatorConfig(probe_seeds=4, solution_seeds=2)

    async def body(sb: TrackingSandbox) -> dict[str, Any]:
        verdicts = {}
        for name in [*VERDICTS, "info_reward_claim", "fake_stdout"]:
            verdicts[name] = await outcome(validate(Program.from_code(code(name)), sb, vcfg))
            await settle(sb)
        return verdicts

    verdicts = run_hostile(body, config)
    wrong = {}
    for name, verdict in verdicts.items():
        if isinstance(verdict, tuple):  # validate raised or a SandboxError escaped
            wrong[name] = verdict
            continue
        checks = {f.check for f in verdict.failures}
        if name in VERDICTS:
            if verdict.admitted or not checks & set(VERDICTS[name]):
                wrong[name] = sorted(checks)
        elif "not_trivial" in checks:  # lies in info or on stdout never make a probe win
            wrong[name] = sorted(checks)
    assert wrong == {}, f"unexpected verdicts: {wrong}"
