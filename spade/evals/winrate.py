"""Play a set of environments with a policy and report win rates with confidence intervals.

    result = await evaluate(policy, sandbox, bundled.heldout_programs(), seeds=range(4), ...)
    result.overall.rate, result.overall.low, result.overall.high, result.by_skill["Optimization"]

    outcomes, result = await evaluate_items(policy, sandbox, programs, params=..., max_turns=1)
    paired_bootstrap(before_outcomes, outcomes).line("near")  # "near: 31.7% -> 43.8% (+12.0 ..."

Intervals are 95% Wilson score intervals over episodes (binomial: win or not). A paired
comparison (the same items before and after, one episode each) is summarised by the mean
per-item difference with a 95% percentile bootstrap interval over items (`paired_bootstrap`:
10,000 resamples from a fixed seed, so the same outcomes always give the same interval) and an
exact McNemar p-value.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from spade.backends.base import Policy, SamplingParams
from spade.sandbox import SandboxAPI
from spade.selfplay.rollout import PlayRequest, Rollout, play
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
    from spade.envs.episode import replay, run_episode
    from spade.envs.sandboxed_checks import replayable
    from spade.sandbox import SandboxError

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


async def evaluate_items(
    policy: Policy,
    sandbox: SandboxAPI,
    programs: Sequence[Program],
    *,
    params: SamplingParams,
    max_turns: int,
    max_context_tokens: int | None = None,
    seed: int = 0,
) -> tuple[list[bool], EvalResult]:
    """Each program played once (episode seed `seed`, no hint): the outcome of every item in
    program order (won: return > 0; an environment that fails is a loss), and their summary."""
    requests = [PlayRequest(p, seed) for p in programs]
    rollouts = await play(
        policy,
        sandbox,
        requests,
        params=params,
        max_turns=max_turns,
        max_context_tokens=max_context_tokens,
    )
    return [r.return_ > 0 for r in rollouts], summarise(rollouts)


def result_of(programs: Sequence[Program], outcomes: Sequence[bool], errors: int = 0) -> EvalResult:
    """The summary of per-item `outcomes` of `programs` (for example a cached evaluation's)."""
    if len(programs) != len(outcomes):
        raise ValueError(f"{len(programs)} programs but {len(outcomes)} outcomes")
    return _result(list(zip(programs, (bool(o) for o in outcomes))), errors)


# --- paired comparison ------------------------------------------------------------------------

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


@dataclasses.dataclass(frozen=True)
class Paired:
    """Before and after on the same items: win rates, their difference (after - before) and a
    95% paired bootstrap interval of it, as fractions; `improved` items were lost before and
    won after, `worsened` the reverse."""

    items: int
    before: float
    after: float
    difference: float
    low: float
    high: float
    improved: int
    worsened: int
    p_value: float
    """Exact two-sided McNemar test (a binomial test on the discordant items)."""

    def to_json(self) -> dict[str, float | int]:
        return dataclasses.asdict(self)

    def line(self, name: str) -> str:
        """`near: 31.7% -> 43.8% (+12.0 points, 95% CI [+6.7, +17.3], paired)`."""
        return (
            f"{name}: {self.before:.1%} -> {self.after:.1%} ({100 * self.difference:+.1f} "
            f"points, 95% CI [{100 * self.low:+.1f}, {100 * self.high:+.1f}], paired)"
        )


def paired_bootstrap(
    before: Sequence[bool],
    after: Sequence[bool],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = 0.95,
) -> Paired:
    """Paired comparison of two outcome vectors over the same items (item i of `before` is
    item i of `after`). The interval is the percentile bootstrap over items: `resamples` times,
    draw len(items) items with replacement and take the mean of their differences
    (after_i - before_i, each -1, 0 or +1); the interval is the (1 - confidence) / 2 and
    (1 + confidence) / 2 quantiles of those means (linear interpolation between order
    statistics, numpy's default). Pure and deterministic for a given `seed`."""
    if len(before) != len(after):
        raise ValueError(f"paired outcomes differ in length: {len(before)} and {len(after)}")
    n = len(before)
    if n == 0:
        raise ValueError("a paired comparison needs at least one item")
    diffs = [int(bool(a)) - int(bool(b)) for b, a in zip(before, after)]
    improved, worsened = diffs.count(1), diffs.count(-1)
    if improved == worsened == 0:  # every resample's mean is 0
        means = [0.0]
    else:
        rng = random.Random(seed)
        means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    tail = (1 - confidence) / 2
    return Paired(
        items=n,
        before=sum(map(bool, before)) / n,
        after=sum(map(bool, after)) / n,
        difference=(improved - worsened) / n,
        low=_quantile(means, tail),
        high=_quantile(means, 1 - tail),
        improved=improved,
        worsened=worsened,
        p_value=mcnemar_exact(improved, worsened),
    )


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, linear between order statistics."""
    position = q * (len(ordered) - 1)
    lo = math.floor(position)
    hi = min(lo + 1, len(ordered) - 1)
    value = ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo)
    return round(value, 12)  # no -1e-17 for a zero


def mcnemar_exact(improved: int, worsened: int) -> float:
    """Two-sided exact McNemar p-value: under no change each discordant item is equally likely
    to have improved or worsened, so min(b, c) is Binomial(b + c, 1/2) at most; 1.0 without
    discordant items."""
    n = improved + worsened
    if n == 0:
        return 1.0
    k = min(improved, worsened)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)
