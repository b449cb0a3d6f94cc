"""Sandbox processes keep to their scratch space and never outlive the process that started them.

- HOME, the XDG base directories, MPLCONFIGDIR and TMPDIR of a worker are its scratch directory;
  the zygote's are inside the scratch root, so a preloaded package that writes caches at import
  writes there, not into the home directory of the user running `spade`;
- whether `spade` leaves the sandbox normally, by an exception, SIGINT, SIGTERM or SIGKILL, no
  zygote or worker process survives it and nothing is left in its temporary directory.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade.sandbox import Sandbox, SandboxConfig, supervisor
from spade.sandbox.lifecycle import private_env

HERE = Path(__file__).parent
TAG = uuid.uuid4().hex[:12]

CACHE_WRITER = '''
"""Writes caches at import, like matplotlib: under ~ and under XDG_CACHE_HOME."""
import os

WROTE = []
for path in (
    os.path.expanduser("~/.cache/spade-cachewriter-{tag}"),
    os.path.join(os.environ.get("XDG_CACHE_HOME", ""), "spade-cachewriter-{tag}"),
    os.path.join(os.environ.get("MPLCONFIGDIR", ""), "spade-cachewriter-{tag}"),
):
    if not os.path.isabs(path):  # the variable is not set: write nothing anywhere
        WROTE.append("not set: " + path)
        continue
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("cache")
        WROTE.append(path)
    except OSError as exc:
        WROTE.append("failed: " + repr(exc))
'''

REPORT_ENV = """
import json, os, tempfile


class ReportEnv:
    def reset(self, seed=None):
        import spade_cachewriter

        return json.dumps({
            "cwd": os.getcwd(),
            "environ": dict(os.environ),
            "expanduser": os.path.expanduser("~"),
            "gettempdir": tempfile.gettempdir(),
            "zygote_wrote": spade_cachewriter.WROTE,
        }), {}

    def step(self, action):
        return "", 0.0, True, False, {}
"""


@pytest.fixture
def cache_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package the zygote preloads (from an extra import path) that writes caches."""
    package = tmp_path / "pkgs" / "spade_cachewriter"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(CACHE_WRITER.replace("{tag}", TAG))
    extra = str(package.parent)
    os.chmod(tmp_path, 0o755)
    original = supervisor._sys_path
    monkeypatch.setattr(supervisor, "_sys_path", lambda: [*original(), extra])
    original_read = supervisor._read_paths
    monkeypatch.setattr(supervisor, "_read_paths", lambda: [*original_read(), extra])
    leak = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / f"spade-cachewriter-{TAG}"
    yield leak
    leak.unlink(missing_ok=True)  # if the test failed, leave the real home as it was


@pytest.mark.parametrize("strict", [False, True], ids=["forked", "strict"])
def test_home_and_caches_stay_in_the_sandbox(cache_writer: Path, strict: bool) -> None:
    config = SandboxConfig(preload=(*SandboxConfig().preload, "spade_cachewriter"))

    async def run() -> tuple[dict[str, Any], str]:
        async with Sandbox(config) as sandbox:
            assert sandbox._scratch_root is not None
            session = await sandbox.open(REPORT_ENV, strict=strict)
            obs, _ = await session.reset(0)
            await session.close()
            return json.loads(obs), sandbox._scratch_root

    report, scratch_root = asyncio.run(run())
    cwd = report["cwd"]
    assert cwd.startswith(scratch_root + "/")
    for name in private_env(cwd):  # HOME, TMPDIR, XDG_*, MPLCONFIGDIR, LANG
        if name != "LANG":
            assert report["environ"][name].startswith(cwd), (name, report["environ"][name])
    assert report["expanduser"] == report["gettempdir"] == cwd
    # the preload ran in the zygote (or the strict worker) before isolation: its caches went
    # into the scratch root, never the home directory of the user running the tests
    wrote = report["zygote_wrote"]
    assert len(wrote) == 3 and all(p.startswith(scratch_root + "/") for p in wrote), wrote
    assert not cache_writer.exists()


# --- no process outlives spade --------------------------------------------------------------


def _started(pid: int) -> int | None:
    """The process's start time (clock ticks after boot), None if there is no such process: with
    pid_max at 32,768 a full suite wraps the pids around, and a pid seen alive here may belong to
    another process seconds later."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _is_sandbox_process(pid: int, started: int | None = None) -> bool:
    """`pid` is a sandbox process (and, given `started`, the same one that was seen then)."""
    try:
        if b"worker.py" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return False
    except OSError:
        return False
    return started is None or _started(pid) == started


def _wait_until(condition: Any, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


# The driver handles SIGINT as in a terminal whatever it inherits (lifecycle_driver.py): run in
# the background, the test once sent SIGINT to a process that ignored it, and "hung".
@pytest.mark.parametrize(
    "ending", ["exit", "exception", "thread-sigint", "SIGINT", "SIGTERM", "SIGKILL"]
)
def test_no_sandbox_process_outlives_spade(ending: str, tmp_path: Path) -> None:
    tmpdir = tmp_path / "tmp"  # the driver's /tmp: it must be empty at the end
    tmpdir.mkdir()
    mode = ending if ending in ("exit", "exception", "thread-sigint") else "wait"
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "lifecycle_driver.py"), mode],
        env=dict(os.environ, TMPDIR=str(tmpdir)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        report = json.loads(line)
        pids = [report["zygote"], *report["workers"]]
        assert len(pids) >= 4 and all(_is_sandbox_process(p) for p in pids)
        started = {p: _started(p) for p in pids}
        assert report["scratch_root"].startswith(str(tmpdir))
        assert Path(report["strict_scratch"]).is_dir()
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        if mode == "wait":
            # A signal that landed while the stdin thread still ran raced asyncio.run's executor
            # shutdown under load (a 30 s hang in one full-suite run): wait until it is done.
            assert proc.stdout.readline().strip() == "waiting"
            time.sleep(0.2)
            proc.send_signal(getattr(signal, ending))
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)  # the driver's faulthandler: every thread's stack
            time.sleep(2)
            proc.kill()
            _, stderr = proc.communicate()
            pytest.fail(f"no end within 30 s after {ending}; the driver's threads:\n{stderr}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    expected = {"exit": 0, "exception": 1, "SIGTERM": -15, "SIGKILL": -9}.get(ending)
    if expected is not None:
        assert proc.returncode == expected, proc.stderr.read() if proc.stderr else ""
    assert _wait_until(lambda: not any(_is_sandbox_process(p, started[p]) for p in pids)), [
        p for p in pids if _is_sandbox_process(p, started[p])
    ]
    assert _wait_until(lambda: not any(tmpdir.iterdir())), list(tmpdir.rglob("*"))
    ns = os.stat("/proc/self/ns/pid").st_ino
    cgroups = Path("/sys/fs/cgroup/pids/spade") / f"z{ns}-{report['zygote']}"
    assert _wait_until(lambda: not cgroups.exists()), f"{cgroups} left behind"


def _gone_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def test_a_new_sandbox_removes_what_dead_sandboxes_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandbox whose `spade` process and zygote were both killed with SIGKILL (by its host, by
    `ray.kill`) leaves its scratch root and its cgroups; the next sandbox removes those of
    processes of its own pid namespace that are gone, and only those."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = _gone_pid()
    ns = os.stat("/proc/self/ns/pid").st_ino
    dead_root = tmp_path / f"spade-sandbox-{ns}-{gone}-abc"
    kept = [
        tmp_path / f"spade-sandbox-{ns}-{os.getpid()}-def",  # in use, whatever it is
        tmp_path / f"spade-sandbox-{ns + 1}-{gone}-ghi",  # another pid namespace's: not ours
    ]
    for root in (dead_root, *kept):
        (root / "w1").mkdir(parents=True)
    spade = [Path("/sys/fs/cgroup") / ctl / "spade" for ctl in ("pids", "memory")]
    cgroups = os.access("/sys/fs/cgroup/pids", os.W_OK)
    # a dead zygote's and strict worker's, and one named before names held the namespace
    names = (f"z{ns}-{gone}", f"s{ns}-{gone}", f"z{gone}")
    dead = [top / name for top in spade for name in names] if cgroups else []
    # in use; another pid namespace's (a container sharing the hierarchy), whatever our /proc says
    kept_names = (f"z{ns}-{os.getpid()}", f"z{os.getpid()}", f"z{ns + 1}-{gone}")
    alive = [top / name for top in spade for name in kept_names] if cgroups else []
    try:
        for group in dead + alive:
            (group / "w1").mkdir(parents=True)

        async def start_and_close() -> str | None:
            async with Sandbox() as sandbox:
                session = await sandbox.open(QUICK_ENV)
                await session.close()
                return sandbox._scratch_root

        ours = asyncio.run(start_and_close())
        assert ours is not None and Path(ours).name.startswith(f"spade-sandbox-{ns}-{os.getpid()}-")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in kept)
        assert [g for g in dead if g.exists()] == []
        assert all((g / "w1").is_dir() for g in alive)
    finally:
        for group in dead + alive:
            for path in (group / "w1", group):
                if path.exists():
                    path.rmdir()


QUICK_ENV = """
class QuickEnv:
    def reset(self, seed=None):
        return "q", {}

    def step(self, action):
        return "ok", 1.0, True, False, {}
"""


@pytest.mark.slow
def test_hundreds_of_sessions_opened_at_once() -> None:
    """A `play` opens one session per episode, all at once: 400 fork requests queued more than
    the control socket holds (EAGAIN) before the spawn gate; every session must open, work and
    close, and no worker outlive the sandbox."""

    async def main() -> list[int]:
        async with Sandbox() as sandbox:
            sessions = await asyncio.gather(*(sandbox.open(QUICK_ENV) for _ in range(400)))
            steps = await asyncio.gather(*(s.step("x") for s in sessions))
            assert all(step.reward == 1.0 for step in steps)
            pids = [s.pid for s in sessions]
            await asyncio.gather(*(s.close() for s in sessions))
        return pids

    pids = asyncio.run(main())
    assert len(set(pids)) == 400
    time.sleep(0.2)
    alive = [p for p in pids if Path(f"/proc/{p}").exists()]
    assert not alive, f"workers outlived the sandbox: {alive[:5]}"
