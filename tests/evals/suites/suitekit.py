"""Helpers for the suite adapter tests: play replies or known answers through a real sandbox.

A suite's zygote preloads the suite's package (reasoning_gym, gem, ...), which takes seconds;
`SuiteSandbox` keeps one sandbox for a whole test module (a module fixture), on an event loop in
a thread of its own, so each helper call opens sessions in it instead of starting a sandbox.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import pytest

from spade.envs.episode import replay, run_episode
from spade.evals.winrate import EvalResult, evaluate_solutions
from spade.sandbox import Sandbox, SandboxConfig
from spade.types import Program

T = TypeVar("T")


class SuiteSandbox:
    """One started `Sandbox(config)` for many blocking helper calls."""

    def __init__(self, config: SandboxConfig) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.sandbox = self._call(Sandbox(config).start())

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        self._call(self.sandbox.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def solutions(self, programs: Sequence[Program], max_turns: int = 1) -> EvalResult:
        """Every program's own `solution()` replayed once (`spade eval --policy solution`)."""
        return self._call(
            evaluate_solutions(self.sandbox, programs, seeds=[0], max_turns=max_turns)
        )

    def returns(
        self, program: Program, episodes: Sequence[Sequence[str]], max_turns: int = 8
    ) -> list[float]:
        """The return of one episode per list of replies (replayed in order)."""

        async def run() -> list[float]:
            out = []
            for replies in episodes:
                async with await self.sandbox.open(program.code, max_turns=max_turns) as session:
                    episode = await run_episode(
                        session, replay(list(replies)), seed=0, max_turns=max_turns
                    )
                    out.append(episode.return_)
            return out

        return self._call(run())

    def solution_of(self, program: Program) -> Any:
        """The program's `solution()` after `reset(0)`."""

        async def run() -> Any:
            async with await self.sandbox.open(program.code) as session:
                await session.reset(0)
                return await session.solution()

        return self._call(run())


def module_sandbox(config: SandboxConfig) -> Any:
    """A module fixture: one `SuiteSandbox(config)` for every test of the module that assigns
    it (`box = module_sandbox(CONFIG)`; the tests take `box`)."""

    @pytest.fixture(scope="module")
    def box() -> Iterator[SuiteSandbox]:
        shared = SuiteSandbox(config)
        yield shared
        shared.close()

    return box
