"""`RaySandbox` on a local Ray cluster faking two nodes (`ray.cluster_utils.Cluster`): the same
verdicts as the local `Sandbox` for the bundled and the hostile environments, sessions spread
over the hosts, a host killed mid-episode gives error results and no hang, and nothing is left
running after shutdown."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

TESTS = Path(__file__).resolve().parents[1]

from spade.backends.base import Message, SamplingParams  # noqa: E402
from spade.cli.main import main  # noqa: E402
from spade.envs import bundled  # noqa: E402
from spade.envs.checks import ValidatorConfig  # noqa: E402
from spade.envs.validate import validate_many  # noqa: E402
from spade.sandbox import Sandbox, SandboxConfig, SandboxError, make_sandbox  # noqa: E402
from spade.sandbox.cluster import RaySandbox, _Host  # noqa: E402
from spade.selfplay.rollout import PlayRequest, play  # noqa: E402
from spade.types import Program  # noqa: E402
from tests.support.scripted import ScriptedPolicy  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")

HOSTILE = TESTS / "programs" / "hostile"
FAST = SandboxConfig(call_timeout_s=1.0, load_timeout_s=3.0, episode_timeout_s=60.0, warm_workers=0)

COUNTDOWN = '''
class CountdownEnv:
    """Reply anything three times; the third reply wins."""

    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.left = 3

    def reset(self, seed=None):
        self.left = 3
        return "Say anything.", {}

    def step(self, action):
        self.left -= 1
        done = self.left == 0
        return ("Done." if done else "Again."), (1.0 if done else 0.0), done, False, {}
'''


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    c.add_node(num_cpus=1)
    c.add_node(num_cpus=0)  # like a trainer's node started with --num-cpus 0: no host there
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


def _verdicts(
    programs: Sequence[Program], sandbox_factory: Any, cfg: SandboxConfig, concurrency: int = 4
) -> list[Any]:
    async def run() -> list[Any]:
        sandbox = await sandbox_factory(cfg).start()
        try:
            return await validate_many(
                programs,
                sandbox,
                ValidatorConfig(probe_seeds=2, solution_seeds=1),
                concurrency=concurrency,
            )
        finally:
            await sandbox.aclose()

    return asyncio.run(run())


def _summary(verdicts: Sequence[Any]) -> list[tuple[bool, tuple[str, ...]]]:
    """Admitted, and which checks failed (how many times a check fails can vary with timing:
    output_flood trips the output cap in a varying number of probe episodes)."""
    return [(v.admitted, tuple(sorted({f.check for f in v.failures}))) for v in verdicts]


@pytest.mark.slow
@pytest.mark.alone  # beside a second pytest worker, once past its timeout (session 16)
@pytest.mark.timeout(600)  # ~245 s alone on a 2-core AMD EPYC: the 300 s default is too close
def test_bundled_environments_validate_identically_through_ray(cluster: Any) -> None:
    programs = bundled.seed_programs() + bundled.heldout_programs()
    cfg = SandboxConfig()
    local = _verdicts(programs, Sandbox, cfg)
    remote = _verdicts(programs, RaySandbox, cfg)
    assert _summary(remote) == _summary(local)
    assert sum(v.admitted for v in remote) == len(programs)  # every bundled one is admitted
    # the same measurements, not only the same yes/no
    assert [v.stats.get("solution_win_rate") for v in remote] == [
        v.stats.get("solution_win_rate") for v in local
    ]


@pytest.mark.slow
@pytest.mark.alone  # FAST's 1 s and 3 s deadlines, local against Ray: load spikes differ
def test_hostile_verdicts_are_the_same_through_ray(cluster: Any) -> None:
    # output_flood is left out: it writes 100 MB in one step, and whether that fits a step's
    # deadline depends on the machine's load, locally as through Ray (test_hostile checks it)
    programs = [
        Program.from_code(p.read_text(), source=p.name)
        for p in sorted(HOSTILE.glob("*.py"))
        if p.stem != "output_flood"
    ]
    cfg = FAST

    def both(programs: list[Program], concurrency: int) -> list[tuple[Program, Any, Any]]:
        local = _verdicts(programs, Sandbox, cfg, concurrency)
        # one host: signal_parent reports its parent's pid, which differs between two hosts, so
        # its determinism check fails where replays land on both (rightly: it depends on placement)
        remote = _verdicts(programs, lambda c: RaySandbox(c, hosts=1), cfg, concurrency)
        return list(zip(programs, local, remote))

    def differing(triples: list[tuple[Program, Any, Any]]) -> list[tuple[Program, Any, Any]]:
        return [(p, a, b) for p, a, b in triples if _summary([a]) != _summary([b])]

    verdicts = both(programs, concurrency=4)
    # FAST's 1 s step deadline is wall-clock: a load spike on one side only (seen in CI: a step of
    # disk_fill.py past 1 s beside a busy process) makes one verdict differ. A program that
    # differs is judged again, one at a time, on both sides: a real difference between the two
    # sandboxes (a layer missing through Ray, a lost failure) is the same every time and stays
    spike = differing(verdicts)
    differ = [
        (p.source, [str(f) for f in a.failures], [str(f) for f in b.failures])
        for p, a, b in differing(both([p for p, _, _ in spike], concurrency=1) if spike else [])
    ]
    assert not differ, differ  # (program, local failures, failures through Ray), judged twice
    assert sum(v.admitted for _, _, v in verdicts) < len(programs) // 2


def test_sessions_go_to_the_least_loaded_host_and_back_pressure_waits(cluster: Any) -> None:
    async def run() -> None:
        async with RaySandbox(FAST, sessions_per_cpu=2) as sandbox:
            assert len(sandbox.hosts) == 2 and all(h.capacity == 2 for h in sandbox.hosts)
            assert len({h.node for h in sandbox.hosts}) == 2
            sessions = [await sandbox.open(COUNTDOWN) for _ in range(4)]
            assert sorted(h.sessions for h in sandbox.hosts) == [2, 2]
            assert {s.host.node for s in sessions} == {h.node for h in sandbox.hosts}
            for s in sessions:
                obs, _ = await s.reset(seed=1)
                assert obs == "Say anything."
            # every host is full: a fifth open waits until a session closes
            fifth = asyncio.ensure_future(sandbox.open(COUNTDOWN))
            await asyncio.sleep(1.0)
            assert not fifth.done()
            await sessions[0].close()
            env = await asyncio.wait_for(fifth, 30)
            assert env.host is sessions[0].host
            result = await env.step("x")
            assert (result.observation, result.reward, result.terminated) == ("Again.", 0.0, False)
            await env.close()
            with pytest.raises(SandboxError) as raised:
                await sandbox.open("class BrokenEnv(:\n")
            assert raised.value.kind == "exception"
            assert sum(h.sessions for h in sandbox.hosts) == 3  # the failed open gave its slot back
            for s in sessions[1:]:
                await s.close()
            assert sum(h.sessions for h in sandbox.hosts) == 0

    asyncio.run(run())


def test_a_host_killed_mid_episode_gives_error_results_and_no_hang(cluster: Any) -> None:
    killed: list[str] = []

    async def run() -> tuple[list[Any], RaySandbox, Any]:
        sandbox = await RaySandbox(FAST).start()
        victim = sandbox.hosts[0]

        def reply(messages: Sequence[Message]) -> str:
            if not killed:  # the first Agent turn, with every episode open
                killed.append(victim.node)
                ray.kill(victim.actor)
            return "go"

        program = Program.from_code(COUNTDOWN)
        requests = [PlayRequest(program, seed) for seed in range(8)]
        rollouts = await asyncio.wait_for(
            play(ScriptedPolicy(reply), sandbox, requests, params=SamplingParams(max_tokens=8)),
            120,
        )
        # a new session after the loss goes to the host that remains
        async with await sandbox.open(COUNTDOWN) as env:
            assert env.host is sandbox.hosts[1]
            await env.reset()
        return rollouts, sandbox, victim

    rollouts, sandbox, victim = asyncio.run(run())
    assert not victim.alive
    errors = [r for r in rollouts if r.error]
    wins = [r for r in rollouts if not r.error and r.return_ == 1.0]
    assert errors and wins and len(errors) + len(wins) == 8
    assert all("lost" in (r.error or "") for r in errors)
    asyncio.run(sandbox.aclose())


def test_nothing_is_left_running_after_shutdown(cluster: Any) -> None:
    async def run() -> list[int]:
        sandbox = await RaySandbox(dataclasses.replace(FAST, warm_workers=2)).start()
        pids = [pid for h in sandbox.hosts for pid in h.pids]
        assert len(set(pids)) == 4 and all(_alive(p) for p in pids)
        env = await sandbox.open(COUNTDOWN)
        await env.reset()
        await sandbox.aclose()
        with pytest.raises(SandboxError):  # a session of a closed sandbox answers, with an error
            await env.step("x")
        return pids

    pids = asyncio.run(run())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    assert not any(_alive(p) for p in pids)  # the host actors and their sandboxes' zygotes


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and b"Z" not in _stat_state(pid)


def _stat_state(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return b"Z"


def test_make_sandbox_names_the_backends() -> None:
    assert isinstance(make_sandbox("local"), Sandbox)
    assert isinstance(make_sandbox("ray"), RaySandbox)
    with pytest.raises(ValueError, match="unknown sandbox"):
        make_sandbox("k8s")


def test_spade_validate_runs_through_ray(cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    seed = next(p for p in bundled.seed_programs() if p.skill == "Logical Deduction")
    assert main(["validate", "--sandbox", "ray", "--json", str(seed.source)]) == 0
    assert '"admitted": true' in capsys.readouterr().out


def test_a_layer_is_active_only_if_every_host_has_it() -> None:
    sandbox = RaySandbox()
    sandbox.hosts = [
        _Host(None, "a" * 16, "n1", 2, {"seccomp": None, "cgroup": None}),
        _Host(None, "b" * 16, "n2", 2, {"seccomp": None, "cgroup": "no writable hierarchy"}),
    ]
    assert sandbox._merged_layers() == {
        "cgroup": "n2 (bbbbbbbb): no writable hierarchy",
        "seccomp": None,
    }


def test_a_host_that_cannot_isolate_fully_is_refused_and_named(cluster: Any) -> None:
    from spade.sandbox.cluster import SandboxHost

    head = ray.get_runtime_context().get_node_id()

    class NoCgroupOnHead(SandboxHost):  # local class: Ray ships it by value
        async def start(self) -> dict[str, Any]:
            if ray.get_runtime_context().get_node_id() == head:
                raise RuntimeError("isolation layers unavailable: cgroup: no writable hierarchy")
            return await super().start()

    async def run() -> tuple[int, dict[str, str]]:
        cfg = dataclasses.replace(FAST, require_full_isolation=True)
        async with RaySandbox(cfg, host_class=NoCgroupOnHead) as sandbox:
            async with await sandbox.open(COUNTDOWN) as env:
                await env.reset()
            return len(sandbox.hosts), dict(sandbox.refused)

    hosts, refused = asyncio.run(run())
    assert hosts == 1
    assert list(refused.values()) == ["isolation layers unavailable: cgroup: no writable hierarchy"]

    class NoCgroupAnywhere(SandboxHost):
        async def start(self) -> dict[str, Any]:
            raise RuntimeError("isolation layers unavailable: cgroup: no writable hierarchy")

    with pytest.raises(RuntimeError, match=r"no sandbox host started: .*cgroup"):
        asyncio.run(RaySandbox(FAST, host_class=NoCgroupAnywhere).start())
