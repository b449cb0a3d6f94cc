"""Program -> Verdict: a list of small named checks, run through the sandbox.

Static checks read the code without running it (size, parse, one environment class,
`spade.envs.checks`; duplicates against a pool, `spade.envs.duplicates`). Dynamic checks run it
in sandbox workers (`spade.envs.sandboxed_checks`): it loads and honours the contract, probe
policies and replies copied from what the environment shows do not win too often, the seed
changes the episode, `solution()` wins when it returns replayable replies, some episode ends by
the environment's own signal, and two fresh interpreters with different `PYTHONHASHSEED` produce
the same transcripts. Resource exhaustion (deadlines, memory, crashes) is a failure like any
other. Every failure is a `CheckFailure(check, reason)`; nothing about the program makes
`validate` raise. The settings are `spade.envs.checks.ValidatorConfig`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence

from spade.envs.checks import STATIC_CHECKS, ValidatorConfig
from spade.envs.duplicates import check_duplicates
from spade.envs.sandboxed_checks import ValidationRun
from spade.sandbox import SandboxAPI
from spade.types import CheckFailure, Program, Verdict


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
    run = ValidationRun(program, sandbox, cfg)
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
