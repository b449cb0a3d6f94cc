"""Program -> Verdict: a list of small named checks, run through the sandbox.

Static checks read the code without running it (size, parse, one environment class, duplicates
against a pool). Dynamic checks run it in sandbox workers: it loads and
honours the contract (types, arity, finite rewards in range, JSON, size caps), probe policies
(empty, constant and random replies) do not win more often than `max_probe_win_rate` over
`probe_seeds` seeds, `solution()` wins when it returns replayable replies (at every declared
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
import random
import re
import time
import tokenize
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from spade.episode import Policy, replay, run_episode
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


RANDOM_VOCAB = (
    [str(i) for i in range(-1, 21)]
    + ["100"]
    + list("ABCDE")
    + "yes no true false up down left right north south east west wait stop buy sell".split()
    + [f"{a} {b}" for a in range(3) for b in range(3)]
    + [f"{a},{b}" for a in range(3) for b in range(3)]
)
GAME_CONSTANTS = ("\\boxed{1}", "\\boxed{test}", "\\boxed{42}", "\\boxed{0}", "\\boxed{A}")
TOOL_CONSTANTS = (
    "<answer>0</answer>",
    "<answer>done</answer>",
    "<answer>yes</answer>",
    "<answer>1</answer>",
)


def probe_policies(kind: str) -> dict[str, Callable[[int], Policy]]:
    """Probe name -> (seed -> policy). Random probes draw from `random.Random(seed)` only."""
    wrap = (lambda x: f"<answer>{x}</answer>") if kind == "tool" else (lambda x: f"\\boxed{{{x}}}")
    probes: dict[str, Callable[[int], Policy]] = {"empty": lambda _seed: lambda t, o: ""}
    for const in TOOL_CONSTANTS if kind == "tool" else GAME_CONSTANTS:
        probes[f"constant {const}"] = (lambda c: lambda _seed: lambda t, o: c)(const)

    def random_policy(seed: int) -> Policy:
        rng = random.Random(10_007 * seed + 1)
        return lambda t, o: wrap(rng.choice(RANDOM_VOCAB))

    probes["random"] = random_policy
    return probes


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


def _constant_policy(policy: Policy) -> Callable[[int], Policy]:
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

    async def episodes_with(
        self,
        policy_for_seed: Callable[[int], Policy],
        seeds: Iterable[int],
        kwargs: dict[str, Any] | None = None,
        context: str = "",
    ) -> list[Episode] | None:
        """Play one episode per seed in one worker; None (and a failure) on a sandbox error."""
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
                        max_turns=self.cfg.max_turns,
                        env_id=self.program.env_id,
                    )
                )
        except SandboxError as err:
            self.failures.append(_failure(err, f"{context}, seed {seeds[len(out)]}"))
            return None
        finally:
            await session.close()
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
        probes = probe_policies(self.kind)
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

    async def solution_for(self, seed: int, kwargs: dict[str, Any]) -> list[str] | str | None:
        """The replayable solution at `seed`, None if not replayable, or an error reason."""
        try:
            session = await self.sandbox.open(
                self.program.code, max_turns=self.cfg.max_turns, kwargs=kwargs
            )
            try:
                await session.reset(seed)
                return replayable(await session.solution(), self.kind)
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
            probe = probe_policies(self.kind)["random"]
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
        run.check_termination()
        # a program already failing at runtime would fail here too, under a misleading name
        if not any(f.check in ("resource", "load", "contract", "exception") for f in run.failures):
            await run.check_determinism()
    failures.extend(run.failures)
    stats = dict(run.stats, seconds=round(time.perf_counter() - started, 3))
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
