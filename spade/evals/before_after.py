"""The evaluations a training run makes before its first and after its last iteration: its
held-out environments (`eval_set`) and the public suites of `eval_suites`, written to eval.json
one result at a time so a resumed run evaluates only what is missing; the lines and summary
fields it reports about them; and the learning curve (`near_subset_rate`, every `eval_every`
iterations).

With `eval_set="paired"` (the small recipe's default) the held-out evaluation is the paired
near and far sets of `spade.evals.sets`, played and compared item by item by
`spade.evals.paired`; the "before" of a model folder is computed once and cached
(`spade.evals.before_cache`), so every run and seed from the same warm start shares it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from spade.backends.base import Models, SamplingParams
from spade.config import TrainConfig
from spade.envs import bundled
from spade.evals.paired import evaluate_set, paired_phase, paired_summary
from spade.evals.sets import EvalSet, paired_sets, subset_indices
from spade.evals.winrate import EvalResult, evaluate
from spade.files import atomic_write_text
from spade.sandbox import SandboxAPI, make_sandbox
from spade.types import GAME_SKILLS, TOOL_SKILLS, Program


def heldout_for(cfg: TrainConfig) -> list[Program]:
    """Held-out environments of the setting (`cfg.eval_set`): the bundled games, tool tasks or
    both, the compact renders of the held-out template families, or the paired near and far
    sets (in that order)."""
    if cfg.eval_set == "paired":
        return [p for s in paired_sets() for p in s.programs]
    if cfg.eval_set == "families":
        from spade.evals.sets import eval_programs

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


def heldout_phase(
    evals: dict[str, Any],
    phase: str,
    models: Models,
    sandbox: SandboxAPI,
    cfg: TrainConfig,
    run_async: Callable[[Any], Any],
    show: Callable[[str], None],
    *,
    use_cache: bool = True,
) -> None:
    """Evaluate the Agent on the held-out set (`phase` "before" or "after" training) into
    `evals[phase]` and write eval.json; with the paired sets, the "after" phase also writes the
    paired comparison (`evals["paired"]`). `use_cache`: the "before" may come from (and goes
    into) the before-cache; the caller says no when the Agent is not its model folder's weights
    (a resumed run)."""
    if not cfg.heldout_eval or phase in evals:
        return
    if cfg.eval_set == "paired":
        evals[phase] = paired_phase(phase, models, sandbox, cfg, run_async, show, use_cache)
        if phase == "after":
            evals["paired"] = paired_summary(evals)
    else:
        show(f"evaluating on the held-out environments ({phase} training)")
        evals[phase] = run_async(heldout(models, sandbox, cfg)).to_json()
    atomic_write_text(cfg.run_dir / "eval.json", json.dumps(evals, indent=2) + "\n")


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
    from spade.evals.suites import suite_budget, suite_programs, suite_sandbox_config

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
    from spade.evals.suites import parse_suite

    name, at, level = spec.partition("@")
    parse_suite(name)
    if at and not level.strip().lstrip("-").isdigit():
        raise ValueError(f"suite {spec!r}: the level after '@' must be an integer")
    return name, int(level) if at else None


# --- what a run prints and reports ---------------------------------------------------------------


def paired_lines(evals: dict[str, Any]) -> list[str]:
    """The lines a run prints: `near set: 31.7% -> 43.8% (+12.0 points, 95% CI [...], paired)`
    for each set (and each part of the far set)."""
    lines = []
    for name, row in ((evals.get("paired") or {}).get("sets") or {}).items():
        if "line" not in row:
            lines.append(f"{name} set: {row.get('skipped', 'not compared')}")
            continue
        lines.append(f"{row['line']} over {row['items']} items")
        for part in (row.get("by_part") or {}).values():
            lines.append(f"{part['line']} over {part['items']} items")
    return lines


def paired_brief(evals: dict[str, Any]) -> dict[str, Any]:
    """Per set: items, before, after, difference and its interval (the run summary's
    `paired`)."""
    keys = ("items", "before", "after", "difference", "low", "high", "p_value")
    return {
        name: {k: row[k] for k in keys}
        for name, row in ((evals.get("paired") or {}).get("sets") or {}).items()
        if "line" in row
    }


def check_config(cfg: TrainConfig) -> None:
    """Refuse evaluation settings that cannot work, before a run starts (a UsageError)."""
    from spade.config import UsageError

    if cfg.eval_every < 0:
        raise UsageError(f"--eval-every must be 0 (off) or more, got {cfg.eval_every}")
    if cfg.eval_subset < 1:
        raise UsageError(f"--eval-subset must be at least 1, got {cfg.eval_subset}")
    if cfg.eval_temperature < 0:
        raise UsageError(f"--eval-temperature must be >= 0, got {cfg.eval_temperature}")


# --- the learning curve --------------------------------------------------------------------------


def curve_due(cfg: TrainConfig, iteration: int) -> bool:
    """Whether iteration `iteration` ends with a learning-curve point: every `eval_every`
    iterations and at the last one (with held-out evaluation on)."""
    if not cfg.heldout_eval or cfg.eval_every <= 0:
        return False
    return iteration % cfg.eval_every == 0 or iteration == cfg.iterations


async def near_subset_rate(models: Models, sandbox: SandboxAPI, cfg: TrainConfig) -> float:
    """The Agent's win rate on the fixed near subset (`eval_subset` items, `eval_params`)."""
    near = paired_sets()[0]
    chosen = subset_indices(near, cfg.eval_subset)
    subset = EvalSet(f"{near.name}[{len(chosen)}]", tuple(near.programs[i] for i in chosen))
    won, _ = await evaluate_set(models, sandbox, subset, cfg)
    return sum(won) / len(won)


def learning_curve(
    evals: dict[str, Any], iterations: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The run summary's learning curve: per iteration the plain win rate on the played pool
    and, where measured, the near subset's win rate; iteration 0 is the "before" evaluation's
    outcomes on the subset's items (the paired set only)."""
    rows: list[dict[str, Any]] = []
    start = (evals.get("before") or {}).get("near_subset_win_rate")
    if start is not None:
        rows.append({"iteration": 0, "near_subset_win_rate": start})
    for m in iterations:
        row = {"iteration": m["iteration"], "plain_win_rate": m.get("plain_win_rate")}
        if m.get("near_subset_win_rate") is not None:
            row["near_subset_win_rate"] = m["near_subset_win_rate"]
        rows.append(row)
    return rows
