"""The checks that run a program, in sandbox workers: it loads and honours the contract (types,
arity, finite rewards in range, JSON, size caps), probe policies (empty, constant, random and
spraying replies; `spade.envs.probes`) do not win more often than `max_probe_win_rate` over
`probe_seeds` seeds, replies copied from what the environment shows (its question, its
feedback) do not win more often than `max_copy_win_rate`, the seed changes the episode,
`solution()` wins when it returns replayable replies (at every declared difficulty), some
episode ends by the environment's own signal, and two fresh interpreters with different
`PYTHONHASHSEED` produce the same transcripts.

`ValidationRun` holds one program's run: each check appends its `CheckFailure`s (a sandbox error
becomes a `resource`, `exception` or `contract` failure) and its statistics; the order the
checks run in is `spade.envs.validate.validate`'s.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from spade.envs.checks import ValidatorConfig
from spade.envs.episode import ReplyFn, replay, run_episode
from spade.envs.probes import blind_probes, copy_probes, tokens
from spade.sandbox import ErrorKind, SandboxAPI, SandboxError
from spade.types import GAME, TOOL, CheckFailure, Episode, Program

_KIND_TO_CHECK: dict[ErrorKind, str] = {
    "timeout": "resource",
    "crashed": "resource",
    "exception": "exception",
    "invalid": "contract",
    "protocol": "contract",
    "closed": "resource",
}


def _failure(err: SandboxError, context: str) -> CheckFailure:
    return CheckFailure(_KIND_TO_CHECK.get(err.kind, err.kind), f"{context}: {err.message}")


_TOOL_BLOCKS = re.compile(
    r"<tool_call>.*?</tool_call>|<answer>.*?</answer>|<function=[^>]*>.*?</function>",
    re.DOTALL | re.IGNORECASE,
)


def replayable(solution: Any, kind: str) -> list[str] | None:
    """`solution()`'s value as replies to replay (a game's answers in `\\boxed{}` or, for a
    code task, a fenced code block; a tool environment's calls), or None when it is not
    replayable (prose, nothing)."""
    marker = ("<answer>", "<tool_call>", "<function=") if kind == TOOL else ("\\boxed{", "```")
    if isinstance(solution, str):
        # The reference's tool-use solution() is prose (a description of the calls, ending in
        # `<answer>...</answer>`) shown at the turn limit, never replayed. A string made only of
        # calls and an answer is one reply; with prose around them it is a description.
        if kind == TOOL and _TOOL_BLOCKS.sub("", solution).strip():
            return None
        solution = [solution]
    if (
        isinstance(solution, list)
        and solution
        and all(isinstance(s, str) for s in solution)
        and any(m in s for s in solution for m in marker)
    ):
        return solution
    return None  # prose (reference tool-use files) or nothing: not replayable


def _constant_policy(policy: ReplyFn) -> Callable[[int], ReplyFn]:
    return lambda _seed: policy


class ValidationRun:
    """One validation: the program, the sandbox, and what the checks found."""

    def __init__(self, program: Program, sandbox: SandboxAPI, cfg: ValidatorConfig) -> None:
        self.program = program
        self.sandbox = sandbox
        self.cfg = cfg
        self.failures: list[CheckFailure] = []
        self.stats: dict[str, Any] = {}
        self.episodes: list[Episode] = []
        self.kind = GAME
        self.probe_episodes: dict[str, list[Episode]] = {}
        self.warnings: list[dict[str, str]] = []
        # difficulty kwargs -> seed -> what solution() returned there (as JSON)
        self.solutions: dict[str, dict[int, str]] = {}

    def warn(self, check: str, reason: str) -> None:
        self.warnings.append({"check": check, "reason": reason})

    async def episodes_with(
        self,
        policy_for_seed: Callable[[int], ReplyFn],
        seeds: Iterable[int],
        kwargs: dict[str, Any] | None = None,
        context: str = "",
        max_turns: int | None = None,
        keep: bool = True,
    ) -> list[Episode] | None:
        """Play one episode per seed in one worker; None (and a failure) on a sandbox error.
        `keep=False`: not among the episodes the termination check reads (a capped episode)."""
        seeds = list(seeds)
        try:
            session = await self.sandbox.open(
                self.program.code, max_turns=self.cfg.max_turns, kwargs=kwargs
            )
        except SandboxError as err:
            self.failures.append(_failure(err, f"{context}: load"))
            return None
        out = []
        try:
            for seed in seeds:
                out.append(
                    await run_episode(
                        session,
                        policy_for_seed(seed),
                        seed=seed,
                        max_turns=max_turns or self.cfg.max_turns,
                        env_id=self.program.env_id,
                    )
                )
        except SandboxError as err:
            self.failures.append(_failure(err, f"{context}, seed {seeds[len(out)]}"))
            return None
        finally:
            await session.close()
        if keep:
            self.episodes.extend(out)
        return out

    async def check_load(self) -> bool:
        try:
            session = await self.sandbox.open(self.program.code, max_turns=self.cfg.max_turns)
        except SandboxError as err:
            self.failures.append(CheckFailure("load", err.message))
            return False
        assert session.info is not None
        self.kind = session.info.kind
        self.stats["class"] = session.info.class_name
        self.stats["kind"] = session.info.kind
        await session.close()
        return True

    async def check_not_trivial(self) -> None:
        seeds = range(self.cfg.probe_seeds)
        probes = blind_probes(self.kind)
        results = await asyncio.gather(
            *(
                self.episodes_with(make, seeds, context=f"probe {name!r}")
                for name, make in probes.items()
            )
        )
        rates = {}
        for name, episodes in zip(probes, results):
            if episodes is None:
                continue
            self.probe_episodes[name] = episodes
            rates[name] = sum(e.won for e in episodes) / len(episodes)
            if rates[name] > self.cfg.max_probe_win_rate:
                self.failures.append(
                    CheckFailure(
                        "not_trivial",
                        f"probe {name!r} wins {rates[name]:.0%} of "
                        f"{len(episodes)} episodes (limit {self.cfg.max_probe_win_rate:.0%})",
                    )
                )
        self.stats["probe_win_rates"] = rates

    def _copy_positions(self) -> dict[str, int]:
        """The most distinct numbers and words any observation the blind probes saw holds: copy
        rules past them could only reply with nothing, like the `\\boxed{}` probe."""
        most = {"number": 0, "word": 0}
        for episodes in self.probe_episodes.values():
            for e in episodes:
                for observation in (e.first_observation, *(t.observation for t in e.turns)):
                    for kind in most:
                        most[kind] = max(most[kind], len(tokens(observation, kind)))
        return most

    async def check_no_answer_leak(self) -> None:
        """Copy rules (`spade.envs.probes.copy_probes`) must not win more than `max_copy_win_rate`
        (not run when a blind probe already wins: any reply would then)."""
        if any(f.check == "not_trivial" for f in self.failures):
            return
        most = self._copy_positions()
        rules = {}
        for name, make in copy_probes(self.kind).items():
            _copy, token_kind, position = name.split()
            # past the most tokens seen a rule replies with nothing; positions 1 and -1 always
            # play, since a leak may show only after the first reply
            if abs(int(position)) <= most[token_kind] or position in ("1", "-1"):
                rules[name] = make
        first, total = self.cfg.copy_seeds
        limit = self.cfg.max_copy_win_rate
        turns = min(self.cfg.copy_turns, self.cfg.max_turns)

        async def rate(name: str, seeds: range) -> list[Episode] | None:
            return await self.episodes_with(
                rules[name], seeds, context=f"probe {name!r}", max_turns=turns, keep=False
            )

        names = list(rules)
        results = await asyncio.gather(*(rate(n, range(first)) for n in names))
        wins = {n: [e.won for e in r] for n, r in zip(names, results) if r is not None}
        suspects = [n for n, w in wins.items() if sum(w) > limit * len(w)]
        more = await asyncio.gather(*(rate(n, range(first, total)) for n in suspects))
        for name, episodes in zip(suspects, more):
            if episodes is not None:
                wins[name] += [e.won for e in episodes]
        rates = {n: sum(w) / len(w) for n, w in wins.items() if w}
        self.stats["copy_win_rates"] = {n: r for n, r in rates.items() if r > 0}
        worst = max(rates, key=lambda n: rates[n], default=None)
        if worst is not None and rates[worst] > limit:
            self.failures.append(
                CheckFailure(
                    "answer_leak",
                    f"probe {worst!r} (reply with what the environment showed) wins "
                    f"{rates[worst]:.0%} of {len(wins[worst])} episodes "
                    f"(limit {limit:.0%}): the answer is in an observation",
                )
            )

    def check_seed_used(self) -> None:
        """The seed must change the episode: its first observation, what the same replies get,
        or what `solution()` returns. A hidden secret behind feedback that never names it is
        told apart from a fixed task by `solution()` only: with no solution, no verdict."""
        if self.cfg.probe_seeds < 2 or any(f.check == "not_trivial" for f in self.failures):
            return
        per_level = [v for v in self.solutions.values() if len(v) > 1]
        unknown = not per_level or any(json.dumps(None) in v.values() for v in per_level)
        fixed = [n for n in self.probe_episodes if n not in ("random", "spray")]
        if not fixed:
            return
        for name in fixed:
            if len({json.dumps(e.transcript()) for e in self.probe_episodes[name]}) > 1:
                return
        if any(len(set(v.values())) > 1 for v in per_level):
            return
        if unknown:
            self.warn(
                "seed_used",
                f"{self.cfg.probe_seeds} seeds gave the same episode and there is no solution() "
                "to tell a hidden secret from a fixed task",
            )
            return
        self.failures.append(
            CheckFailure(
                "seed_used",
                f"{self.cfg.probe_seeds} seeds gave the same episode (first observation, the "
                "probes' transcripts and the solution): reset() ignores its seed, so there is "
                "one task to memorise",
            )
        )

    async def solution_for(self, seed: int, kwargs: dict[str, Any]) -> list[str] | str | None:
        """The replayable solution at `seed`, None if not replayable, or an error reason."""
        try:
            session = await self.sandbox.open(
                self.program.code, max_turns=self.cfg.max_turns, kwargs=kwargs
            )
            try:
                await session.reset(seed)
                value = await session.solution()
                key = json.dumps(kwargs, sort_keys=True)
                self.solutions.setdefault(key, {})[seed] = json.dumps(value, default=repr)
                return replayable(value, self.kind)
            finally:
                await session.close()
        except SandboxError as err:
            self.failures.append(_failure(err, f"solution() at seed {seed}"))
            return "error"

    async def check_solvable(self) -> None:
        levels: list[int | None] = list(self.program.difficulty_levels()) or [None]
        lengths: dict[str, list[int]] = {}
        for level in levels:
            kwargs = {} if level is None else {"difficulty": level}
            label = "default" if level is None else f"difficulty {level}"
            for seed in range(self.cfg.solution_seeds):
                replies = await self.solution_for(seed, kwargs)
                if replies == "error":
                    return
                if replies is None:
                    self.stats["solution"] = "not replayable (skipped)"
                    self.warn("solution_replay", "solution() is not replayable: solvable skipped")
                    return
                assert isinstance(replies, list)
                episodes = await self.episodes_with(
                    _constant_policy(replay(replies)), [seed], kwargs, f"solution replay ({label})"
                )
                if episodes is None:
                    return
                if not episodes[0].won:
                    self.failures.append(
                        CheckFailure(
                            "solvable",
                            f"solution() does not win at {label}, seed {seed} "
                            f"(return {episodes[0].return_:g} after "
                            f"{len(episodes[0].turns)} turns)",
                        )
                    )
                    return
                lengths.setdefault(label, []).append(len(replies))
        self.stats["solution"] = "wins"
        self.stats["solution_lengths"] = lengths

    def check_termination(self) -> None:
        ended = [
            e
            for e in self.episodes
            if e.turns and (e.turns[-1].terminated or e.turns[-1].truncated)
        ]
        if self.episodes and not ended:
            self.failures.append(
                CheckFailure(
                    "termination",
                    f"none of {len(self.episodes)} episodes ended by the environment's "
                    f"own signal within {self.cfg.max_turns} turns",
                )
            )

    async def transcripts(self, hash_seed: int) -> list[Any] | str:
        try:
            session = await self.sandbox.open(
                self.program.code, max_turns=self.cfg.max_turns, strict=True, hash_seed=hash_seed
            )
        except SandboxError as err:
            return f"load in a fresh interpreter: {err.message}"
        out: list[Any] = []
        try:
            probe = blind_probes(self.kind)["random"]
            for seed in self.cfg.determinism_seeds:
                await session.reset(seed)
                out.append(
                    replayable(await session.solution(), self.kind)
                    if self.stats.get("solution") == "wins"
                    else None
                )
                episode = await run_episode(
                    session, probe(seed), seed=seed, max_turns=self.cfg.max_turns
                )
                out.append(episode.transcript())
        except SandboxError as err:
            return f"in a fresh interpreter: {err.message}"
        finally:
            await session.close()
        return out

    async def check_determinism(self) -> None:
        a, b = await asyncio.gather(*(self.transcripts(h) for h in self.cfg.hash_seeds))
        for result in (a, b):
            if isinstance(result, str):
                self.failures.append(CheckFailure("determinism", result))
                return
        if a != b:
            self.failures.append(
                CheckFailure(
                    "determinism",
                    "the same seeds gave different transcripts in fresh interpreters "
                    f"with PYTHONHASHSEED={self.cfg.hash_seeds[0]} and {self.cfg.hash_seeds[1]} "
                    "(global random state, time, or set/dict iteration order?)",
                )
            )
