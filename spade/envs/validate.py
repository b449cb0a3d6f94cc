"""Program -> Verdict: a list of small named checks, run through the sandbox.

Static checks read the code without running it (size, parse, one environment class, duplicates
against a pool). Dynamic checks run it in sandbox workers: it loads and
honours the contract (types, arity, finite rewards in range, JSON, size caps), probe policies
(empty, constant, random and spraying replies; `spade.envs.probes`) do not win more often than
`max_probe_win_rate` over `probe_seeds` seeds, replies copied from what the environment shows
(its question, its feedback) do not win more often than `max_copy_win_rate`, the seed changes
the episode, `solution()` wins when it returns replayable replies (at every declared
difficulty), some episode ends by the environment's own signal, and two fresh interpreters with
different `PYTHONHASHSEED` produce the same transcripts. Resource exhaustion (deadlines, memory,
crashes) is a failure like any other. Every failure is a `CheckFailure(check, reason)`; nothing
about the program makes `validate` raise.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import io
import json
import re
import time
import tokenize
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from spade.envs.episode import ReplyFn, replay, run_episode
from spade.envs.probes import blind_probes, copy_probes, tokens
from spade.sandbox import SandboxAPI, SandboxError
from spade.sandbox.runtime import env_class_names
from spade.types import CheckFailure, Episode, Program, Verdict


@dataclasses.dataclass(frozen=True)
class ValidatorConfig:
    max_code_bytes: int = 64_000
    """Largest accepted program (bytes of UTF-8)."""
    max_turns: int = 25
    """Turn cap of every validation episode (the runtime truncates there)."""
    probe_seeds: int = 8
    """Seeds each probe policy plays."""
    max_probe_win_rate: float = 0.25
    """A probe policy winning more often than this makes the program trivially solvable."""
    solution_seeds: int = 4
    """Seeds on which a replayable `solution()` must win, at every declared difficulty."""
    determinism_seeds: tuple[int, ...] = (3, 7)
    """Seeds replayed in two fresh interpreters that must produce identical transcripts."""
    hash_seeds: tuple[int, int] = (1, 2)
    """PYTHONHASHSEED of the two fresh interpreters."""
    near_duplicate_threshold: float = 0.9
    """Jaccard similarity of token 5-gram sets at or above which a program is a near-duplicate."""
    copy_seeds: tuple[int, int] = (16, 64)
    """Seeds each copy rule plays: the first number for every rule, the second for a rule that
    won more than `max_copy_win_rate` of them (so a shuffled two-option question, which a fixed
    position wins half the time, is rejected by chance about once in 50,000 rules)."""
    max_copy_win_rate: float = 0.75
    """A copy rule (`spade.envs.probes.copy_probes`) winning more often than this means the
    environment shows its answer. Above `max_probe_win_rate`: an honest question may name its
    options, and a fixed position then wins about half the time."""
    copy_turns: int = 4
    """Turn cap of a copy episode (a leak in the feedback shows from the second turn)."""


# --- static checks ----------------------------------------------------------------------------


def check_size(program: Program, cfg: ValidatorConfig) -> CheckFailure | None:
    size = len(program.code.encode("utf-8", "replace"))
    if size == 0 or not program.code.strip():
        return CheckFailure("size", "the program is empty")
    if size > cfg.max_code_bytes:
        return CheckFailure("size", f"{size} bytes exceeds the {cfg.max_code_bytes}-byte limit")
    return None


def check_parse(program: Program, cfg: ValidatorConfig) -> CheckFailure | None:
    try:
        with warnings.catch_warnings():  # the program's invalid escapes are not our warnings
            warnings.simplefilter("ignore")
            ast.parse(program.code)
    except SyntaxError as exc:
        return CheckFailure("parse", f"SyntaxError: {exc.msg} (line {exc.lineno})")
    except (ValueError, RecursionError, MemoryError) as exc:
        return CheckFailure("parse", f"{type(exc).__name__}: {exc}")
    return None


def check_env_class(program: Program, cfg: ValidatorConfig) -> CheckFailure | None:
    names = env_class_names(program.code)
    if not names:
        return CheckFailure("env_class", "no top-level class whose name ends in 'Env'")
    if len(names) > 1:
        return CheckFailure(
            "env_class",
            f"{len(names)} environment classes ({', '.join(names)}); expected exactly one",
        )
    return None


# Top-level statements (`random.seed(0)`, a print) are allowed, as in the reference: the file
# runs in the sandbox anyway, and the determinism check catches what they break.
STATIC_CHECKS = (check_size, check_parse, check_env_class)


def shingles(code: str, n: int = 5) -> frozenset[tuple[str, ...]]:
    """Token n-grams with literals normalised: a renamed constant does not make a new program."""
    tokens: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (
                tokenize.COMMENT,
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENDMARKER,
            ):
                continue
            tokens.append(
                {tokenize.STRING: "STR", tokenize.NUMBER: "NUM"}.get(tok.type, tok.string)
            )
    except (tokenize.TokenError, SyntaxError):
        tokens = code.split()
    return frozenset(tuple(tokens[i : i + n]) for i in range(max(len(tokens) - n + 1, 1)))


def check_duplicates(
    program: Program, pool: Sequence[Program], cfg: ValidatorConfig
) -> CheckFailure | None:
    env_id = program.env_id
    mine = shingles(program.code)
    for other in pool:
        if other.env_id == env_id:
            return CheckFailure(
                "duplicate", f"identical to {env_id[:12]} ({other.source or 'pool'})"
            )
    for other in pool:
        theirs = shingles(other.code)
        jaccard = len(mine & theirs) / max(len(mine | theirs), 1)
        if jaccard >= cfg.near_duplicate_threshold:
            return CheckFailure(
                "near_duplicate",
                f"{jaccard:.2f} token similarity to {other.env_id[:12]} ({other.source or 'pool'})",
            )
    return None


# --- dynamic checks ---------------------------------------------------------------------------

CHECKS: dict[str, str | None] = {
    "size": None,
    "parse": None,
    "env_class": None,
    "duplicate": None,
    "near_duplicate": None,
    "load": None,
    "contract": None,
    "exception": None,
    "resource": None,
    "not_trivial": None,
    "answer_leak": "semantic.no_solution_leakage",
    "seed_used": None,
    "solvable": "semantic.oracle_max",
    "termination": None,
    "determinism": "runtime.episode_determinism",
    "solution_replay": None,  # a warning only: solution() is not replayable, solvable skipped
}
"""Every check name a verdict can carry (stable: they appear in `spade validate --json`, the pool
and the Designer's failure counts), with the check of OpenEnv's validation proposal (RFC 008)
it corresponds to, where one does (docs/environments.md). `seed_used` is a warning instead of an
error when there is no `solution()` to tell a hidden secret from a fixed task."""


def report_row(verdict: Verdict) -> dict[str, Any]:
    """`verdict.to_json()` with a `checks` list: each failure (severity `error`: it rejects) and
    each warning (severity `warning`: it does not), with its RFC 008 counterpart."""
    rows = [
        {"check": f.check, "severity": "error", "rfc008": CHECKS.get(f.check), "reason": f.reason}
        for f in verdict.failures
    ]
    rows += [
        {
            "check": w["check"],
            "severity": "warning",
            "rfc008": CHECKS.get(w["check"]),
            "reason": w["reason"],
        }
        for w in verdict.stats.get("warnings", ())
    ]
    return {**verdict.to_json(), "checks": rows}


_KIND_TO_CHECK = {
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
    marker = ("<answer>", "<tool_call>", "<function=") if kind == "tool" else ("\\boxed{", "```")
    if isinstance(solution, str):
        # The reference's tool-use solution() is prose (a description of the calls, ending in
        # `<answer>...</answer>`) shown at the turn limit, never replayed. A string made only of
        # calls and an answer is one reply; with prose around them it is a description.
        if kind == "tool" and _TOOL_BLOCKS.sub("", solution).strip():
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


class _Run:
    """One validation: the program, the sandbox, and what the checks found."""

    def __init__(self, program: Program, sandbox: SandboxAPI, cfg: ValidatorConfig) -> None:
        self.program = program
        self.sandbox = sandbox
        self.cfg = cfg
        self.failures: list[CheckFailure] = []
        self.stats: dict[str, Any] = {}
        self.episodes: list[Episode] = []
        self.kind = "game"
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


async def validate(
    program: Program,
    sandbox: SandboxAPI,
    cfg: ValidatorConfig | None = None,
    pool: Sequence[Program] = (),
) -> Verdict:
    """Run every check that can run; the verdict lists each failure with its reason."""
    cfg = cfg or ValidatorConfig()
    started = time.perf_counter()
    failures: list[CheckFailure] = []
    for check in STATIC_CHECKS:
        failure = check(program, cfg)
        if failure is not None:
            return Verdict(program.env_id, False, (failure,))
    duplicate = check_duplicates(program, pool, cfg)
    if duplicate is not None:
        failures.append(duplicate)
    run = _Run(program, sandbox, cfg)
    if await run.check_load():
        await asyncio.gather(run.check_not_trivial(), run.check_solvable())
        await run.check_no_answer_leak()
        run.check_seed_used()
        run.check_termination()
        # a program already failing at runtime would fail here too, under a misleading name
        if not any(f.check in ("resource", "load", "contract", "exception") for f in run.failures):
            await run.check_determinism()
    failures.extend(run.failures)
    stats = dict(run.stats, seconds=round(time.perf_counter() - started, 3))
    if run.warnings:
        stats["warnings"] = run.warnings
    return Verdict(program.env_id, not failures, tuple(failures), stats)


async def validate_many(
    programs: Sequence[Program],
    sandbox: SandboxAPI,
    cfg: ValidatorConfig | None = None,
    pool: Sequence[Program] = (),
    concurrency: int = 4,
    on_verdict: Callable[[int, Verdict], None] | None = None,
) -> list[Verdict]:
    """Validate programs concurrently, in order of the result list.

    Besides `pool`, each program is checked for duplicates of the programs before it that were
    admitted (a near-copy of a rejected program is not a duplicate of anything admitted).
    `on_verdict(i, verdict)` is called in input order as soon as each final verdict is known.
    """
    cfg = cfg or ValidatorConfig()
    semaphore = asyncio.Semaphore(concurrency)

    async def one(program: Program) -> Verdict:
        async with semaphore:
            return await validate(program, sandbox, cfg, pool)

    tasks = [asyncio.ensure_future(one(p)) for p in programs]
    verdicts: list[Verdict] = []
    admitted: list[Program] = []
    for i, (program, task) in enumerate(zip(programs, tasks)):
        verdict = await task
        if verdict.admitted:
            duplicate = check_duplicates(program, admitted, cfg)
            if duplicate is None:
                admitted.append(program)
            else:
                verdict = dataclasses.replace(verdict, admitted=False, failures=(duplicate,))
        verdicts.append(verdict)
        if on_verdict is not None:
            on_verdict(i, verdict)
    return verdicts
