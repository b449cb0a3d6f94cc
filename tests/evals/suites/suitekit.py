"""Helpers for the suite adapter tests: play replies or known answers through a real sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from spade.envs.episode import replay, run_episode
from spade.evals.winrate import EvalResult, evaluate_solutions
from spade.sandbox import Sandbox, SandboxConfig
from spade.types import Program


def solutions(programs: Sequence[Program], config: SandboxConfig, max_turns: int = 1) -> EvalResult:
    """Every program's own `solution()` replayed once (`spade eval --policy solution`)."""

    async def run() -> EvalResult:
        async with Sandbox(config) as sandbox:
            return await evaluate_solutions(sandbox, programs, seeds=[0], max_turns=max_turns)

    return asyncio.run(run())


def returns(
    program: Program, episodes: Sequence[Sequence[str]], config: SandboxConfig, max_turns: int = 8
) -> list[float]:
    """The return of one episode per list of replies (replayed in order)."""

    async def run() -> list[float]:
        out = []
        async with Sandbox(config) as sandbox:
            for replies in episodes:
                async with await sandbox.open(program.code, max_turns=max_turns) as session:
                    episode = await run_episode(
                        session, replay(list(replies)), seed=0, max_turns=max_turns
                    )
                    out.append(episode.return_)
        return out

    return asyncio.run(run())


def solution_of(program: Program, config: SandboxConfig) -> Any:
    """The program's `solution()` after `reset(0)`."""

    async def run() -> Any:
        async with Sandbox(config) as sandbox, await sandbox.open(program.code) as session:
            await session.reset(0)
            return await session.solution()

    return asyncio.run(run())
