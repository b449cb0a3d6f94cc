"""Sandboxes across the nodes of a Ray cluster, with the local sandbox's API.

    async with RaySandbox() as sandbox:               # RAY_ADDRESS, or a local Ray
        async with await sandbox.open(code) as env:   # on the least-loaded host
            obs, info = await env.reset(seed=0)

One `SandboxHost` actor per node (hard node affinity) owns an ordinary `Sandbox` there: the
environment programs run in that node's isolated workers, away from the trainer's GPUs and
credentials. A session stays on the host that opened it. `open` picks the live host with the
fewest sessions below its limit (`sessions_per_cpu` x the node's CPUs) and waits for a free slot
when every host is full: backpressure, no unbounded queue. A lost host (its node or actor died)
turns its sessions' calls into `SandboxError("crashed")`, which the loop already scores as an
episode error, and new sessions go to the hosts that remain. Every call to a host has a deadline
beyond the sandbox's own, so a host that stops answering cannot hang the trainer.

Requests cross the wire as plain data (code, actions, seeds) and come back as plain data; the
trainer never unpickles anything a model wrote. Hosts need `spade` installed on their nodes.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import os
from typing import Any

from spade.sandbox.contract import ErrorKind, LoadInfo, SandboxConfig, SandboxError, StepResult
from spade.sandbox.supervisor import Sandbox

SESSIONS_PER_CPU = 32
"""Default open sessions per CPU of a host: a session mostly waits for the model's next reply."""
HOST_GRACE_S = 30.0
"""Added to the sandbox's own deadline for a call to a host (Ray transport and queueing)."""


def _error(exc: SandboxError) -> tuple[str, ErrorKind, str, str]:
    return ("err", exc.kind, exc.message, exc.detail)


class SandboxHost:
    """The Ray actor (async) that serves sessions of one node's `Sandbox` by id.

    Its methods return `("ok", value)` or `("err", kind, message, detail)`; the caller raises
    the `SandboxError`. Created by `RaySandbox`; usable directly with `ray.remote(SandboxHost)`."""

    def __init__(self, config: SandboxConfig) -> None:
        self._config = config
        self._sandbox: Sandbox | None = None
        self._sessions: dict[int, Any] = {}
        self._next = 0

    async def start(self) -> dict[str, Any]:
        """Start the sandbox; returns its layers, node id, host name, CPUs and pid."""
        import socket

        import ray

        self._sandbox = await Sandbox(self._config).start()
        return {
            "layers": self._sandbox.layers,
            "node": ray.get_runtime_context().get_node_id(),
            "hostname": socket.gethostname(),
            "cpus": os.cpu_count() or 1,
            "pid": os.getpid(),
            "zygote_pid": self._sandbox._zygote.pid if self._sandbox._zygote else None,
        }

    async def open(
        self,
        code: str,
        max_turns: int,
        kwargs: dict[str, Any],
        strict: bool,
        hash_seed: int,
        filename: str,
    ) -> tuple[Any, ...]:
        assert self._sandbox is not None, "start() first"
        try:
            session = await self._sandbox.open(
                code,
                max_turns=max_turns,
                kwargs=kwargs,
                strict=strict,
                hash_seed=hash_seed,
                filename=filename,
            )
        except SandboxError as exc:
            return _error(exc)
        self._next += 1
        self._sessions[self._next] = session
        info = dataclasses.asdict(session.info) if session.info else None
        return ("ok", {"id": self._next, "info": info, "layers": session.layers})

    async def call(self, sid: int, op: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """`op` of session `sid`: reset, step, call_tool or solution."""
        session = self._sessions.get(sid)
        if session is None:
            return ("err", "closed", "session closed", "")
        if op not in ("reset", "step", "call_tool", "solution"):
            return ("err", "protocol", f"unknown call {op!r}", "")
        try:
            value = await getattr(session, op)(*args)
        except SandboxError as exc:
            return _error(exc)
        if isinstance(value, StepResult):
            value = dataclasses.astuple(value)
        return ("ok", value, session.alive)

    async def batch(self, requests: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Several `open`, `call` and `close` requests (method name, arguments) at once, of
        different sessions: one actor hop for all of them."""
        methods: dict[str, Any] = {"open": self.open, "call": self.call, "close": self.close}
        return list(await asyncio.gather(*(methods[m](*args) for m, args in requests)))

    async def close(self, sid: int) -> str:
        """Close session `sid`; returns its captured output."""
        session = self._sessions.pop(sid, None)
        if session is None:
            return ""
        output = session.output
        await session.close()
        return output

    async def sessions(self) -> int:
        return len(self._sessions)

    async def shutdown(self) -> None:
        for sid in list(self._sessions):
            await self.close(sid)
        if self._sandbox is not None:
            await self._sandbox.aclose()
            self._sandbox = None


@dataclasses.dataclass
class _Host:
    actor: Any
    node: str
    hostname: str
    capacity: int
    layers: dict[str, str | None]
    pids: tuple[int, ...] = ()
    """The host actor's process and its sandbox zygote's, on its node."""
    sessions: int = 0
    alive: bool = True
    queue: list[tuple[str, tuple[Any, ...], asyncio.Future[Any]]] = dataclasses.field(
        default_factory=list
    )
    """Requests waiting for the next batch to this host (`RaySandbox._batched`)."""

    @property
    def name(self) -> str:
        return f"{self.hostname} ({self.node[:8]})"


class RemoteSession:
    """A session on a `SandboxHost`: the local `Session`'s calls, each sent to the host in one
    batch with the other requests made in the same event-loop turn."""

    def __init__(
        self, owner: RaySandbox, host: _Host, sid: int, info: LoadInfo | None, layers: dict
    ) -> None:
        self._owner, self.host, self.sid = owner, host, sid
        self.info = info
        self.layers: dict[str, str | None] = layers
        self._alive = True
        self._closed = False
        self._output = ""

    @property
    def alive(self) -> bool:
        return self._alive and self.host.alive

    @property
    def output(self) -> str:
        """Captured output of the worker, as returned when the session was closed."""
        return self._output

    async def _call(self, op: str, *args: Any) -> Any:
        if self._closed:
            raise SandboxError("closed", "session closed")
        reply = await self._owner._batched(self.host, "call", self.sid, op, args)
        if reply[0] == "err":
            self._alive = reply[1] not in ("crashed", "timeout", "protocol", "closed")
            raise SandboxError(reply[1], reply[2], reply[3])
        self._alive = bool(reply[2])
        return reply[1]

    async def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        obs, info = await self._call("reset", seed)
        return obs, info

    async def step(self, action: str) -> StepResult:
        return StepResult(*await self._call("step", action))

    async def call_tool(self, name: str, args: dict[str, Any]) -> tuple[str, int]:
        output, code = await self._call("call_tool", name, args)
        return output, code

    async def solution(self) -> Any:
        return await self._call("solution")

    async def close(self) -> None:
        """Close the remote session and free its slot. Idempotent; never raises."""
        if self._closed:
            return
        self._closed = True
        self._alive = False
        try:
            self._output = await self._owner._batched(self.host, "close", self.sid)
        except SandboxError:
            pass
        self._owner._release(self.host)

    async def __aenter__(self) -> RemoteSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class RaySandbox:
    """The `Sandbox` API over `SandboxHost` actors, one per node of a Ray cluster.

    `address`: a Ray cluster (None: `RAY_ADDRESS`, else a local Ray started here and shut
    down by `aclose`). `hosts`: at most this many nodes (None: every alive node that has CPUs;
    a node started with `--num-cpus 0` gets none). `host_class`: a `SandboxHost` subclass to
    run instead (custom hosts; the tests use one to fake a host without a layer). With
    `config.require_full_isolation` a host missing an isolation layer is refused, and the
    sandbox does not start if every host is."""

    def __init__(
        self,
        config: SandboxConfig | None = None,
        *,
        address: str | None = None,
        hosts: int | None = None,
        sessions_per_cpu: int = SESSIONS_PER_CPU,
        host_class: type[SandboxHost] | None = None,
    ) -> None:
        self.config = config or SandboxConfig()
        self.layers: dict[str, str | None] = {}
        self.hosts: list[_Host] = []
        self.refused: dict[str, str] = {}
        """Hosts refused at start (name -> why)."""
        self._address = address
        self._max_hosts = hosts
        self._sessions_per_cpu = sessions_per_cpu
        self._host_class = host_class or SandboxHost
        self._started_ray = False
        self._flushes: set[asyncio.Task[None]] = set()
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def start(self) -> RaySandbox:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not ray.is_initialized():
            address = self._address or os.environ.get("RAY_ADDRESS")
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(include_dashboard=False, log_to_driver=False)
                self._started_ray = True
        # a node started with --num-cpus 0 (the trainer's, say) gets no host
        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")]
        nodes = nodes[: self._max_hosts] if self._max_hosts else nodes
        actor_class: Any = ray.remote(self._host_class)
        actors = [
            actor_class.options(
                num_cpus=0,
                max_concurrency=10_000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
            ).remote(self.config)
            for n in nodes
        ]
        starts = await asyncio.gather(*(a.start.remote() for a in actors), return_exceptions=True)
        for node, actor, started in zip(nodes, actors, starts):
            node_cpus = node.get("Resources", {}).get("CPU")  # what Ray was told the node has
            if isinstance(started, BaseException):
                why = str(getattr(started, "cause", None) or started).strip().splitlines()
                self.refused[node["NodeManagerHostname"]] = why[-1] if why else repr(started)
                ray.kill(actor)
                continue
            self.hosts.append(
                _Host(
                    actor,
                    started["node"],
                    started["hostname"],
                    max(1, int(self._sessions_per_cpu * (node_cpus or started["cpus"]))),
                    started["layers"],
                    (started["pid"], started["zygote_pid"] or started["pid"]),
                )
            )
        if not self.hosts:
            await self.aclose()
            raise RuntimeError(
                "no sandbox host started: "
                + "; ".join(f"{k}: {v}" for k, v in self.refused.items())
            )
        self.layers = self._merged_layers()
        return self

    def _merged_layers(self) -> dict[str, str | None]:
        """A layer is active only if it is on every host; else the hosts that lack it, and why."""
        names = {k for h in self.hosts for k in h.layers}
        merged: dict[str, str | None] = {}
        for name in sorted(names):
            missing = [f"{h.name}: {h.layers[name]}" for h in self.hosts if h.layers.get(name)]
            merged[name] = "; ".join(missing) if missing else None
        return merged

    async def _remote(self, host: _Host, method: str, *args: Any) -> Any:
        """One actor call with a deadline; a lost host becomes SandboxError("crashed")."""
        import ray

        if not host.alive:
            raise SandboxError("crashed", f"sandbox host {host.name} was lost")
        config = self.config
        slowest = max(config.call_timeout_s, config.start_timeout_s + config.load_timeout_s)
        deadline = slowest + HOST_GRACE_S  # an open waits for the start and then the load
        try:
            return await asyncio.wait_for(getattr(host.actor, method).remote(*args), deadline)
        except asyncio.TimeoutError:
            raise SandboxError("timeout", f"sandbox host {host.name} did not answer") from None
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
            host.alive = False
            raise SandboxError(
                "crashed", f"sandbox host {host.name} was lost", str(exc)[:500]
            ) from None

    async def _batched(self, host: _Host, method: str, *args: Any) -> Any:
        """A request to a host, sent with the others made in the same event-loop turn as one
        `batch`: 64 sessions stepping at once cost one actor hop, not 64."""
        future = asyncio.get_running_loop().create_future()
        host.queue.append((method, args, future))
        if len(host.queue) == 1:  # the first of a batch schedules its flush
            task = asyncio.ensure_future(self._flush(host))
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)
        return await future

    async def _flush(self, host: _Host) -> None:
        await asyncio.sleep(0)  # let the other sessions resumed in this turn queue their calls
        batch, host.queue = host.queue, []
        try:
            replies = await self._remote(host, "batch", [(m, a) for m, a, _ in batch])
        except BaseException as exc:
            for *_, future in batch:
                if not future.done():
                    future.set_exception(
                        SandboxError(exc.kind, exc.message, exc.detail)
                        if isinstance(exc, SandboxError)
                        else exc
                    )
            if not isinstance(exc, Exception):
                raise
            return
        for (*_, future), reply in zip(batch, replies):
            if not future.done():
                future.set_result(reply)

    async def _acquire(self) -> _Host:
        """A slot on the live host with the most room, waiting (in order) while all are full."""
        while True:
            live = [h for h in self.hosts if h.alive]
            if not live:
                raise SandboxError("crashed", "every sandbox host was lost")
            room = [h for h in live if h.sessions < h.capacity]
            if room:
                host = min(room, key=lambda h: h.sessions / h.capacity)
                host.sessions += 1
                return host
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _release(self, host: _Host) -> None:
        host.sessions -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def open(
        self,
        code: str,
        *,
        max_turns: int = 25,
        kwargs: dict[str, Any] | None = None,
        strict: bool = False,
        hash_seed: int = 0,
        filename: str = "<env>",
    ) -> RemoteSession:
        """Load `code` on the least-loaded live host; the local `Sandbox.open`'s contract.

        A host lost while opening is skipped and the next one tried."""
        while True:
            host = await self._acquire()
            try:
                reply = await self._batched(
                    host, "open", code, max_turns, kwargs or {}, strict, hash_seed, filename
                )
            except SandboxError:
                self._release(host)
                if host.alive:
                    raise
                continue  # the host was lost: try the others
            except BaseException:
                self._release(host)
                raise
            if reply[0] == "err":
                self._release(host)
                raise SandboxError(reply[1], reply[2], reply[3])
            value = reply[1]
            info = (
                None
                if value["info"] is None
                else LoadInfo(**{**value["info"], "tools": tuple(value["info"]["tools"])})
            )
            return RemoteSession(self, host, value["id"], info, dict(value["layers"]))

    async def aclose(self) -> None:
        """Close every session and sandbox on every host, kill the hosts, and stop the local
        Ray if this sandbox started it."""
        import ray

        for host in self.hosts:
            if host.alive:
                try:
                    await self._remote(host, "shutdown")
                except SandboxError:
                    pass
            ray.kill(host.actor)
            host.alive = False
        self.hosts = []
        if self._started_ray:
            ray.shutdown()
            self._started_ray = False

    async def __aenter__(self) -> RaySandbox:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
