"""The evaluations a training run makes before its first and after its last iteration: its
held-out environments (`eval_set`) and the public suites of `eval_suites`, written to eval.json
one result at a time so a resumed run evaluates only what is missing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from spade import bundled
from spade.backends.base import SamplingParams
from spade.config import TrainConfig
from spade.evaluate import EvalResult, evaluate
from spade.loop import Models
from spade.rundir import atomic_write_text
from spade.sandbox import SandboxAPI, make_sandbox
from spade.types import GAME_SKILLS, TOOL_SKILLS, Program


def heldout_for(cfg: TrainConfig) -> list[Program]:
    """Held-out environments of the setting (`cfg.eval_set`): the bundled games, tool tasks or
    both, or the compact renders of the held-out template families."""
    if cfg.eval_set == "families":
        from spade.warmdata import eval_programs

        return eval_programs()
    games = any(s in GAME_SKILLS for s in cfg.design.skills)
    tools = any(s in TOOL_SKILLS for s in cfg.design.skills)
    return [
        p
        for p in bundled.heldout_programs()
        if (games and p.skill in GAME_SKILLS) or (tools and p.skill in TOOL_SKILLS)
    ]


async def heldout(models: Models, sandbox: SandboxAPI, cfg: TrainConfig) -> EvalResult:
    params = SamplingParams(
        max_tokens=cfg.play.max_tokens, temperature=cfg.play.temperature, seed=cfg.seed + 7
    )
    return await evaluate(
        models.agent,
        sandbox,
        heldout_for(cfg),
        seeds=range(cfg.eval_seeds),
        params=params,
        max_turns=cfg.play.max_turns,
        max_context_tokens=cfg.model.max_context_tokens,
        kwargs=None if cfg.eval_difficulty is None else {"difficulty": cfg.eval_difficulty},
    )


def suites_phase(
    evals: dict[str, Any],
    phase: str,
    models: Models,
    cfg: TrainConfig,
    run_async: Callable[[Any], Any],
    show: Callable[[str], None],
) -> None:
    """Evaluate the Agent on each of `cfg.eval_suites` not yet in `evals["suites"][phase]`,
    writing eval.json after each (a resumed run redoes only what is missing)."""
    if not (cfg.heldout_eval and cfg.eval_suites):
        return
    done = evals.setdefault("suites", {}).setdefault(phase, {})
    for spec in cfg.eval_suites:
        if spec not in done:
            show(f"evaluating on {spec} ({phase} training)")
            done[spec] = run_async(_suite(models, cfg, spec))
            if "skipped" in done[spec]:
                show(f"  skipped: {done[spec]['skipped']}")
            atomic_write_text(cfg.run_dir / "eval.json", json.dumps(evals, indent=2) + "\n")


async def _suite(models: Models, cfg: TrainConfig, spec: str) -> dict[str, Any]:
    """One suite (`NAME[:SUBSET,...][@LEVEL]`) in its own sandbox, with the suite's turn and
    reply budget (as `spade eval --suite`); {"skipped": why} when it cannot be built."""
    from spade.suites import suite_budget, suite_programs, suite_sandbox_config

    name, level = split_suite_spec(spec)
    try:
        programs = suite_programs(name, limit=cfg.eval_suite_limit, level=level, seed=0)
    except ValueError as exc:
        return {"skipped": str(exc)}
    turns, tokens = suite_budget(name)
    params = SamplingParams(max_tokens=tokens, temperature=cfg.play.temperature, seed=cfg.seed + 7)
    sandbox = make_sandbox(cfg.sandbox_backend, suite_sandbox_config(name, cfg.sandbox))
    await sandbox.start()
    try:
        result = await evaluate(
            models.agent,
            sandbox,
            programs,
            seeds=range(cfg.eval_seeds),
            params=params,
            max_turns=turns,
            max_context_tokens=cfg.model.max_context_tokens,
        )
    finally:
        await sandbox.aclose()
    return result.to_json()


def split_suite_spec(spec: str) -> tuple[str, int | None]:
    """`NAME[:SUBSET,...][@LEVEL]` -> (`NAME[:SUBSET,...]`, level); raises ValueError on an
    unknown suite or a level that is not an integer (checked before a run starts)."""
    from spade.suites import parse_suite

    name, at, level = spec.partition("@")
    parse_suite(name)
    if at and not level.strip().lstrip("-").isdigit():
        raise ValueError(f"suite {spec!r}: the level after '@' must be an integer")
    return name, int(level) if at else None
