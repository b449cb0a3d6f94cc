"""Play a bundle's environments from inside another framework, every program in our sandbox.

`EnvHost` owns one sandbox for the host framework's process (started on first use, stopped by
`aclose`) and opens `HostedEpisode`s: a sandbox session plus the rules our own rollouts follow
(a game reply reduced to its first `\\boxed{}`, the turn cap, the outcome-only return). An
environment that crashes or times out mid-episode ends it, truncated with no reward and the
error in `info`, as a trainer expects; one that cannot start raises.

Frameworks with a synchronous API (GEM) use `SyncHost`: the same host on an event loop in a
daemon thread, shared per bundle in the process and closed at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import random
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from spade.envs.bundle import Bundle, BundledEnv, read_bundle
from spade.envs.episode import to_action
from spade.exports.gem_import import sandbox_config_for
from spade.sandbox import SandboxAPI, SandboxError, SessionAPI, StepResult, make_sandbox

T = TypeVar("T")


class EpisodeOver(RuntimeError):
    """step() after the episode ended, or before reset()."""


class HostedEpisode:
    """One live environment instance; `reset` may be called again to start a new episode."""

    def __init__(self, env: BundledEnv, session: SessionAPI, max_turns: int) -> None:
        self.env = env
        self.session = session
        assert session.info is not None
        own = session.info.max_turns
        self.max_turns = min(max_turns, own) if own else max_turns
        self.kind = session.info.kind
        self.tools = session.info.tools
        self.turns = 0
        self.done = True
        self.won = False
        self.return_ = 0.0

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {"env_id": self.env.env_id, "skill": self.env.skill, "turn": self.turns, **extra}

    async def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        observation, _ = await self.session.reset(seed)
        self.turns, self.done, self.won, self.return_ = 0, False, False, 0.0
        return observation, self._info(seed=seed, kind=self.kind, max_turns=self.max_turns)

    async def step(self, reply: str) -> StepResult:
        """Send the agent's reply as our rollouts do; end the episode at the turn cap."""
        if self.done:
            raise EpisodeOver("the episode is over: call reset() first")
        self.turns += 1
        try:
            result = await self.session.step(to_action(self.session, reply))
        except SandboxError as err:
            self.done = True
            return StepResult("", 0.0, False, True, self._info(error=f"{err.kind}: {err}"))
        terminated, truncated = result.terminated, result.truncated
        if not (terminated or truncated) and self.turns >= self.max_turns:
            truncated = True
        if terminated or truncated:
            self.done = True
            self.return_ = max(-1.0, min(1.0, float(result.reward))) if terminated else 0.0
            self.won = self.return_ > 0
        info = self._info(won=self.won) if self.done else self._info()
        return StepResult(result.observation, result.reward, terminated, truncated, info)

    async def solution(self) -> list[str] | None:
        """The environment's own winning replies for the current episode, if it has them."""
        replies = await self.session.solution()
        return [str(r) for r in replies] if isinstance(replies, list) else None

    async def close(self) -> None:
        await self.session.close()


class EnvHost:
    """A bundle's environments behind one sandbox."""

    def __init__(self, bundle: Bundle | str | Path, sandbox: SandboxAPI | None = None) -> None:
        self.bundle = bundle if isinstance(bundle, Bundle) else read_bundle(bundle)
        self._sandbox = sandbox
        self._started: SandboxAPI | None = None
        self._lock: asyncio.Lock | None = None

    def pick(self, task: str | int | None = None, seed: int | None = None) -> BundledEnv:
        """`task` (index or env_id prefix) if given; else an environment drawn with `seed`
        (the same seed draws the same one), or at random without one."""
        if task is not None:
            return self.bundle.find(task)
        rng = random.Random(seed) if seed is not None else random.Random()
        return self.bundle.envs[rng.randrange(len(self.bundle.envs))]

    async def start(self) -> SandboxAPI:
        if self._started is None:
            self._lock = self._lock or asyncio.Lock()
            async with self._lock:
                if self._started is None:
                    config = sandbox_config_for(self.bundle.code.values())
                    sandbox = self._sandbox or make_sandbox("local", config)
                    await sandbox.start()
                    self._started = sandbox
        return self._started

    async def open(self, env: BundledEnv) -> HostedEpisode:
        sandbox = await self.start()
        session = await sandbox.open(
            self.bundle.code[env.env_id], max_turns=self.bundle.max_turns, filename=env.file
        )
        return HostedEpisode(env, session, self.bundle.max_turns)

    async def aclose(self) -> None:
        if self._started is not None:
            sandbox, self._started = self._started, None
            await sandbox.aclose()


class SyncHost:
    """An `EnvHost` on its own event loop thread, for synchronous frameworks."""

    def __init__(self, bundle: Bundle | str | Path) -> None:
        self.host = EnvHost(bundle)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="spade-sandbox", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        if not self._thread.is_alive():
            coro.close()
            raise RuntimeError("the spade sandbox host is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        if self._thread.is_alive():
            self.call(self.host.aclose())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)


_SHARED: dict[Path, SyncHost] = {}
_SHARED_LOCK = threading.Lock()


def shared_host(directory: str | Path) -> SyncHost:
    """The process's `SyncHost` for the bundle in `directory` (one sandbox per bundle)."""
    key = Path(directory).resolve()
    with _SHARED_LOCK:
        if key not in _SHARED:
            if not _SHARED:
                # Before concurrent.futures stops taking work at exit (the sandbox's shutdown
                # waits for its zygote in an executor): threading's exit hooks run first.
                register = getattr(threading, "_register_atexit", atexit.register)
                register(close_shared_hosts)
            _SHARED[key] = SyncHost(key)
        return _SHARED[key]


def close_shared_hosts() -> None:
    with _SHARED_LOCK:
        hosts = list(_SHARED.values())
        _SHARED.clear()
    for h in hosts:
        h.close()
