"""Play a set of environments with a policy and report win rates with confidence intervals.

    result = await evaluate(policy, sandbox, bundled.heldout_programs(), seeds=range(4), ...)
    result.overall.rate, result.overall.low, result.overall.high, result.by_skill["Optimization"]

Intervals are 95% Wilson score intervals over episodes (binomial: win or not).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from spade.backends.base import Policy, SamplingParams
from spade.rollout import PlayRequest, Rollout, play
from spade.sandbox import SandboxAPI
from spade.types import Program


@dataclasses.dataclass(frozen=True)
class WinRate:
    wins: int
    episodes: int

    @property
    def rate(self) -> float:
        return self.wins / self.episodes if self.episodes else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.wins, self.episodes)

    def to_json(self) -> dict[str, float]:
        low, high = self.interval
        return {
            "wins": self.wins,
            "episodes": self.episodes,
            "rate": self.rate,
            "low": low,
            "high": high,
        }


def wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a binomial proportion; (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclasses.dataclass(frozen=True)
class EvalResult:
    overall: WinRate
    by_skill: dict[str, WinRate]
    errors: int
    """Episodes whose environment failed (counted as losses)."""
    by_family: dict[str, WinRate] = dataclasses.field(default_factory=dict)
    """By the part of each program's source before its last `/` (for the evaluation set,
    `eval:<family>` or `eval:mini-seen:<family>`; for files, their folder)."""

    def to_json(self) -> dict[str, object]:
        return {
            "overall": self.overall.to_json(),
            "by_skill": {k: v.to_json() for k, v in sorted(self.by_skill.items())},
            "by_family": {k: v.to_json() for k, v in sorted(self.by_family.items())},
            "errors": self.errors,
        }

    def share(self, keep: Callable[[str], bool]) -> WinRate:
        """Wins and episodes over the families whose name `keep` accepts."""
        parts = [v for k, v in self.by_family.items() if keep(k)]
        return WinRate(sum(v.wins for v in parts), sum(v.episodes for v in parts))


def summarise(rollouts: Sequence[Rollout]) -> EvalResult:
    return _result(
        [(r.request.program, r.return_ > 0) for r in rollouts], sum(1 for r in rollouts if r.error)
    )


def _result(outcomes: Sequence[tuple[Program, bool]], errors: int) -> EvalResult:
    by_skill: dict[str, list[bool]] = {}
    by_family: dict[str, list[bool]] = {}
    for program, won in outcomes:
        by_skill.setdefault(program.skill or "unknown", []).append(won)
        family = (program.source or "unknown").rsplit("/", 1)[0]
        by_family.setdefault(family, []).append(won)
    wins = [w for ws in by_skill.values() for w in ws]
    return EvalResult(
        WinRate(sum(wins), len(wins)),
        {k: WinRate(sum(v), len(v)) for k, v in by_skill.items()},
        errors,
        {k: WinRate(sum(v), len(v)) for k, v in by_family.items()},
    )


async def evaluate_solutions(
    sandbox: SandboxAPI,
    programs: Sequence[Program],
    *,
    seeds: Iterable[int],
    max_turns: int,
    concurrency: int = 8,
) -> EvalResult:
    """Each program played once per seed by replaying its own `solution()` (`spade eval
    --policy solution`): a check that an environment, or a suite adapter, scores its known
    answer as a win. A program without a solution, or whose solution fails, loses."""
    from spade.episode import replay, run_episode
    from spade.sandbox import SandboxError
    from spade.validate import replayable

    gate = asyncio.Semaphore(concurrency)

    async def one(program: Program, seed: int) -> tuple[Program, bool, bool]:
        async with gate:
            try:
                async with await sandbox.open(program.code, max_turns=max_turns) as session:
                    await session.reset(seed)
                    assert session.info is not None
                    actions = replayable(await session.solution(), session.info.kind)
                    if actions is None:  # what the validator would not replay either
                        return program, False, True
                    episode = await run_episode(
                        session, replay(actions), seed=seed, max_turns=max_turns
                    )
            except SandboxError:
                return program, False, True
            return program, episode.return_ > 0, False

    done = await asyncio.gather(*(one(p, s) for p in programs for s in seeds))
    return _result([(p, won) for p, won, _ in done], sum(1 for *_, error in done if error))


async def evaluate(
    policy: Policy,
    sandbox: SandboxAPI,
    programs: Sequence[Program],
    *,
    seeds: Iterable[int],
    params: SamplingParams,
    max_turns: int,
    max_context_tokens: int | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> EvalResult:
    """Each program played once per seed (without hint), built with constructor `kwargs` (for
    example `{"difficulty": 1}`); see the module docstring."""
    seeds = list(seeds)
    requests = [PlayRequest(p, s, kwargs=dict(kwargs or {})) for p in programs for s in seeds]
    rollouts = await play(
        policy,
        sandbox,
        requests,
        params=params,
        max_turns=max_turns,
        max_context_tokens=max_context_tokens,
    )
    return summarise(rollouts)
