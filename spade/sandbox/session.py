"""One environment instance in one worker process, seen from the trusted side (`Session`).

A session speaks to its worker over three pipes: requests out, length-prefixed reply frames in
(`_Reader` checks each length before buffering the payload), stdout and stderr captured with a
cap (`_Output`). Every call has a deadline and is charged to the episode's time budget; a reply
is re-validated here (types, arity, finiteness, ranges, sizes) before it becomes a `LoadInfo`, an
observation or a `StepResult`, and any fault kills the worker and raises `SandboxError`. Workers
are started by the `Sandbox` in supervisor.py, whose docstring holds the threat model.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import signal
import subprocess
import time
from typing import Any, Protocol

from spade.sandbox import cgroups, frames, lifecycle
from spade.sandbox.contract import ErrorKind, LoadInfo, SandboxConfig, SandboxError, StepResult


class _Owner(Protocol):
    """What a session needs of the `Sandbox` that opened it: the set it leaves when closed."""

    _sessions: set[Session]


class _Reader(asyncio.Protocol):
    """Frames from a worker's reply pipe; checks each length before buffering its payload."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.buf = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            (length,) = frames.HEADER.unpack_from(self.buf)
            if length > self.session.config.max_reply_bytes:
                self.buf.clear()
                self.session._fail(
                    "protocol",
                    f"reply frame of {length} bytes exceeds the "
                    f"{self.session.config.max_reply_bytes}-byte cap",
                )
                return
            if len(self.buf) < 4 + length:
                return
            payload = bytes(self.buf[4 : 4 + length])
            del self.buf[: 4 + length]
            try:
                self.session._on_frame(payload)
            except Exception as exc:  # noqa: BLE001 - a reply we cannot handle is a protocol fault
                self.buf.clear()
                self.session._fail("protocol", f"unreadable reply: {type(exc).__name__}: {exc}")
                return

    def connection_lost(self, exc: Exception | None) -> None:
        self.session._on_eof()


class _Output(asyncio.Protocol):
    """Captured stdout/stderr: keeps the first max_output_bytes, drains and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0

    def data_received(self, data: bytes) -> None:
        room = self.cap - len(self.kept)
        self.kept += data[:room]
        self.dropped += max(0, len(data) - room)


class Session:
    """One environment instance in one worker process. Use through `Sandbox.open`."""

    def __init__(self, sandbox: _Owner, config: SandboxConfig) -> None:
        self.sandbox = sandbox
        self.config = config
        self.pid = 0
        self.pidfd = -1
        self.layers: dict[str, str | None] = {}
        self.info: LoadInfo | None = None
        self.env_seconds = 0.0
        """Time spent inside environment calls; the episode budget is charged with it."""
        self._pending: asyncio.Future[Any] | None = None
        self._hello: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.exit_status: asyncio.Future[dict[str, int]] = (
            asyncio.get_running_loop().create_future()
        )
        self._writer: asyncio.WriteTransport | None = None
        self._transports: list[asyncio.BaseTransport] = []
        self._output = _Output(config.max_output_bytes)
        self._dead: SandboxError | None = None
        self._scratch: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # -- plumbing ---------------------------------------------------------------------------

    async def _attach(self, req_w: int, rep_r: int, out_r: int) -> None:
        loop = asyncio.get_running_loop()
        wt, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(req_w, "wb", 0))
        rt, _ = await loop.connect_read_pipe(lambda: _Reader(self), os.fdopen(rep_r, "rb", 0))
        ot, _ = await loop.connect_read_pipe(lambda: self._output, os.fdopen(out_r, "rb", 0))
        self._writer = wt  # type: ignore[assignment]
        self._transports = [wt, rt, ot]

    def _on_frame(self, payload: bytes) -> None:
        try:
            msg = frames.decode_payload(payload)
        except frames.FrameError as exc:
            self._fail("protocol", str(exc))
            return
        if not self._hello.done():
            if isinstance(msg, dict) and msg.get("op") == "hello":
                self._hello.set_result(msg)
            else:
                self._fail("protocol", "worker did not start with a hello frame")
            return
        if self._pending is None or self._pending.done():
            self._fail("protocol", "unsolicited reply frame")
            return
        self._pending.set_result(msg)

    def _on_eof(self) -> None:
        if self._dead is None:
            self._fail("crashed", "worker exited", kill=False)

    def _fail(self, kind: ErrorKind, message: str, kill: bool = True) -> None:
        if self._dead is None:
            self._dead = SandboxError(kind, message)
        if kill:
            self.kill()
        for fut in (self._pending, self._hello):
            if fut is not None and not fut.done():
                fut.set_exception(self._dead)
                # Marked as retrieved: a warm worker closed before any use (the sandbox shutting
                # down) has no awaiter, and asyncio would log "exception was never retrieved".
                # An awaiter still gets the exception; every later call raises `_dead`.
                fut.exception()

    def kill(self) -> None:
        if self.pidfd >= 0:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    @property
    def alive(self) -> bool:
        return self._dead is None

    @property
    def output(self) -> str:
        """Captured stdout/stderr of the worker (capped)."""
        text = self._output.kept.decode("utf-8", "replace")
        if self._output.dropped:
            text += f"\n[... {self._output.dropped} more bytes dropped]"
        return text

    async def _death_reason(self) -> str:
        with contextlib.suppress(asyncio.TimeoutError):
            status = await asyncio.wait_for(asyncio.shield(self.exit_status), 0.5)
            if "signal" in status:
                name = signal.Signals(status["signal"]).name
                return f"worker killed by {name}"
            return f"worker exited with status {status['code']}"
        return "worker exited"

    async def _call(self, request: dict[str, Any], timeout: float) -> Any:
        if self._dead is not None:
            raise SandboxError(
                "closed" if self._dead.kind == "closed" else self._dead.kind,
                f"session unusable: {self._dead.message}",
            )
        remaining = self.config.episode_timeout_s - self.env_seconds
        budget = min(timeout, remaining)
        what = request["op"]
        if budget <= 0:
            self._fail("timeout", "episode time budget exhausted")
            raise SandboxError("timeout", f"{what}: episode time budget exhausted")
        loop = asyncio.get_running_loop()
        self._pending = fut = loop.create_future()
        assert self._writer is not None
        try:
            self._writer.write(frames.encode(request))
        except (OSError, RuntimeError) as exc:
            self._fail("crashed", f"cannot write to worker: {exc}")
        sent = time.monotonic()
        try:
            reply = await asyncio.wait_for(fut, budget)
        except asyncio.TimeoutError:
            limit = "episode budget" if remaining < timeout else f"{timeout:g} s deadline"
            self._fail("timeout", f"{what} exceeded the {limit}")
            raise SandboxError("timeout", f"{what} exceeded the {limit}") from None
        except SandboxError as exc:
            if exc.kind == "crashed":
                raise SandboxError(
                    "crashed", f"{what}: {await self._death_reason()}", self.output[-2000:]
                ) from None
            raise
        finally:
            self._pending = None
            self.env_seconds += time.monotonic() - sent
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            raise SandboxError("protocol", f"{what}: malformed reply")
        if not reply["ok"]:
            message = f"{reply.get('type', '?')}: {reply.get('message', '')}"
            kind: ErrorKind = "invalid" if reply.get("error") == "unserialisable" else "exception"
            raise SandboxError(
                kind, f"{what} raised {message}"[:2000], str(reply.get("traceback", ""))[:4000]
            )
        return reply.get("value")

    async def _started(self) -> None:
        """Wait for the worker's hello (it has started and isolated itself), within
        `start_timeout_s`. The program's load is timed from there: a fresh interpreter's start
        (strict mode: Python, the preload, the layers; ~0.2 s, seconds on a busy machine) is
        not the program's, and counted in its deadline it failed a program that loads in 1 s
        under a 3 s deadline."""
        if self._hello.done():
            self._hello.result()  # a worker that died before its hello: raise why
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._hello), self.config.start_timeout_s)
        except asyncio.TimeoutError:
            limit = f"{self.config.start_timeout_s:g} s start deadline"
            self._fail("timeout", f"worker start exceeded the {limit}")
            raise SandboxError("timeout", f"worker start exceeded the {limit}") from None
        except SandboxError as exc:
            if exc.kind == "crashed":
                raise SandboxError("crashed", f"start: {await self._death_reason()}") from None
            raise

    # -- the API ----------------------------------------------------------------------------

    async def _load(self, code: str, max_turns: int, kwargs: dict[str, Any], filename: str) -> None:
        await self._started()
        request = {
            "op": "load",
            "code": code,
            "max_turns": max_turns,
            "kwargs": kwargs,
            "filename": filename,
        }
        value = await self._call(request, self.config.load_timeout_s)
        hello = self._hello.result()
        layers = hello.get("layers") if isinstance(hello, dict) else None
        if isinstance(layers, dict):
            self.layers.update({str(k): (None if v is None else str(v)) for k, v in layers.items()})
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("class"), str)
            or value.get("kind") not in ("game", "tool")
            or not isinstance(value.get("tools"), list)
        ):
            raise SandboxError("protocol", "load: malformed reply")
        self.info = LoadInfo(
            value["class"],
            value["kind"],
            tuple(t for t in value["tools"] if isinstance(t, dict)),
            bool(value.get("has_solution")),
            _turn_cap(value.get("max_turns"), max_turns),
        )

    async def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        value = await self._call({"op": "reset", "seed": seed}, self.config.call_timeout_s)
        if not isinstance(value, list) or len(value) != 2:
            raise SandboxError(
                "invalid", f"reset must return (observation, info), got {_shape(value)}"
            )
        obs, info = value
        self._check_obs("reset", obs)
        if not isinstance(info, dict):
            raise SandboxError("invalid", f"reset info must be a dict, got {type(info).__name__}")
        return obs, info

    async def step(self, action: str) -> StepResult:
        value = await self._call({"op": "step", "action": action}, self.config.call_timeout_s)
        if not isinstance(value, list) or len(value) != 5:
            raise SandboxError(
                "invalid",
                "step must return (observation, reward, terminated, truncated, info), "
                f"got {_shape(value)}",
            )
        obs, reward, terminated, truncated, info = value
        self._check_obs("step", obs)
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            raise SandboxError("invalid", f"reward must be a number, got {type(reward).__name__}")
        try:
            value_f = float(reward)
        except OverflowError:  # a huge int is valid JSON
            value_f = math.inf
        if not math.isfinite(value_f) or abs(value_f) > self.config.reward_bound:
            shown = f"{value_f!r}" if not math.isfinite(value_f) else f"{reward!r}"[:40]
            raise SandboxError(
                "invalid",
                f"reward {shown} outside "
                f"[-{self.config.reward_bound:g}, {self.config.reward_bound:g}]",
            )
        for name, flag in (("terminated", terminated), ("truncated", truncated)):
            if not isinstance(flag, bool):
                raise SandboxError("invalid", f"{name} must be a bool, got {type(flag).__name__}")
        if not isinstance(info, dict):
            raise SandboxError("invalid", f"step info must be a dict, got {type(info).__name__}")
        return StepResult(obs, value_f, terminated, truncated, info)

    async def call_tool(self, name: str, args: dict[str, Any]) -> tuple[str, int]:
        value = await self._call(
            {"op": "tool", "name": name, "args": args}, self.config.call_timeout_s
        )
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("output"), str)
            or type(value.get("returncode")) is not int
            or value["returncode"] not in (0, 1)
        ):
            raise SandboxError("invalid", "execute_tool must return {output: str, returncode: 0|1}")
        self._check_obs("tool", value["output"])
        return value["output"], value["returncode"]

    async def solution(self) -> Any:
        """The environment's `solution()` as JSON data (not trusted: the caller replays it)."""
        return await self._call({"op": "solution"}, self.config.call_timeout_s)

    def _check_obs(self, what: str, obs: Any) -> None:
        if not isinstance(obs, str):
            raise SandboxError(
                "invalid", f"{what} observation must be a str, got {type(obs).__name__}"
            )
        if len(obs) > self.config.max_observation_chars:
            raise SandboxError(
                "invalid",
                f"{what} observation of {len(obs)} chars exceeds "
                f"{self.config.max_observation_chars}",
            )

    async def close(self) -> None:
        """Kill the worker and release everything it held. Idempotent."""
        if self._dead is None or self._dead.kind != "closed":
            self._fail("closed", "session closed")
        for transport in self._transports:
            transport.close()
        self._transports = []
        if not self.exit_status.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.exit_status), 5.0)
        if self.pidfd >= 0:
            if self._proc is not None:
                asyncio.get_running_loop().remove_reader(self.pidfd)
            os.close(self.pidfd)
            self.pidfd = -1
        if self._proc is not None:
            # the kernel can hold an exited worker's groups for a moment (EBUSY); leaving them
            # would leave two empty cgroups on the host per strict session
            deadline = time.monotonic() + 2.0
            tag = cgroups.group_tag("s", self._proc.pid, lifecycle.pid_namespace())
            while not cgroups.remove_cgroup_tree(tag, "s"):
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.01)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
        self.sandbox._sessions.discard(self)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _turn_cap(reported: Any, budget: int) -> int:
    """The worker's turn cap, trusted only within [1, budget]."""
    if type(reported) is int and 1 <= reported <= budget:
        return reported
    return budget


def _shape(value: Any) -> str:
    if isinstance(value, list):
        return f"a sequence of {len(value)}"
    return type(value).__name__
