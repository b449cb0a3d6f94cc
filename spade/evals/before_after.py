"""The evaluations a training run makes before its first and after its last iteration: its
held-out environments (`eval_set`) and the public suites of `eval_suites`, written to eval.json
one result at a time so a resumed run evaluates only what is missing; and the learning curve
(`near_subset_rate`, every `eval_every` iterations).

With `eval_set="paired"` (the small recipe's default) the held-out evaluation is the paired
near and far sets of `spade.evals.sets`, each item played once, greedily by default
(`eval_temperature`), and compared item by item (`spade.evals.winrate.paired_bootstrap`). The
"before" of a model folder is computed once and cached (`before_cache_path`): keyed by the
folder's weights fingerprint, the Agent's precision and device, the set's content hash and the
sampling settings, so every run and seed from the same warm start shares it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spade.backends.base import Models, SamplingParams
from spade.config import TrainConfig
from spade.envs import bundled
from spade.evals.sets import EvalSet, paired_sets, subset_indices
from spade.evals.winrate import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    EvalResult,
    evaluate,
    evaluate_items,
    paired_bootstrap,
    result_of,
)
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


# --- the paired sets ---------------------------------------------------------------------------

EVAL_SAMPLE_SEED = 7
"""Sampling seed of the paired evaluations when `eval_temperature` > 0: fixed, not the run's
seed, so runs of every seed share a sampled "before" too and before and after draw alike."""

CACHE_VERSION = 1
"""Bump when what a cached outcome means changes (the rollout, the scoring)."""


def eval_params(cfg: TrainConfig) -> SamplingParams:
    """Sampling of the paired evaluations and the learning curve: greedy unless
    `eval_temperature` > 0, the Agent's reply length."""
    return SamplingParams(
        max_tokens=cfg.play.max_tokens, temperature=cfg.eval_temperature, seed=EVAL_SAMPLE_SEED
    )


def weights_fingerprint(folder: str | Path) -> str:
    """sha256 over a model folder's top-level files (weights, config, tokenizer, chat
    template) except spade's own notes (`spade_*`), by name and content; "" when `folder` is
    not a directory (a hub id). Memoised per file sizes and modification times."""
    path = Path(folder)
    if not path.is_dir():
        return ""
    files = sorted(
        f for f in path.iterdir() if f.is_file() and not f.name.startswith(("spade_", "."))
    )
    stamp = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    return _fingerprint(str(path.resolve()), stamp)


@functools.lru_cache(maxsize=16)
def _fingerprint(folder: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for name, _, _ in stamp:
        digest = hashlib.sha256()
        with open(Path(folder) / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        h.update(name.encode() + b"\0" + digest.digest())
    return h.hexdigest()


def model_identity(models: Models) -> dict[str, str] | None:
    """What the Agent's outcomes depend on besides the set and the sampling: its model folder's
    weights fingerprint, precision and device type; None when it has no model folder (a
    scripted policy, a served model), which disables the before-cache."""
    agent: Any = models.agent
    folder = getattr(agent, "model_path", None)
    fingerprint = weights_fingerprint(folder) if folder else ""
    if not fingerprint:
        return None
    device = str(getattr(agent, "device", "")).split(":")[0]
    return {
        "weights": fingerprint,
        "precision": str(getattr(agent, "precision", "")),
        "device": device,
    }


def before_cache_key(
    identity: dict[str, str], evalset: EvalSet, params: SamplingParams, cfg: TrainConfig
) -> str:
    """The before-cache key: the model's identity, the set's content hash, the sampling settings
    (the seed only when sampling), the turn and context budget and the Agent's system prompt."""
    from spade.prompts import agent_system

    sampling = {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": params.top_k,
        "max_tokens": params.max_tokens,
        "stop": list(params.stop),
        "seed": params.seed if params.temperature > 0 else None,
    }
    parts = {
        "v": CACHE_VERSION,
        "model": identity,
        "set": evalset.content_hash,
        "sampling": sampling,
        "max_turns": cfg.play.max_turns,
        "max_context_tokens": cfg.model.max_context_tokens,
        "agent_system": hashlib.sha256(agent_system("game").encode()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def before_cache_path(key: str) -> Path:
    """Where a cached "before" lives: the model cache's `evaluations/` folder
    (`spade.backends.tiny.cache_dir()`, $SPADE_CACHE_DIR when set)."""
    from spade.backends.tiny import cache_dir

    return cache_dir() / "evaluations" / f"before-{key}.json"


def _read_cached(path: Path, evalset: EvalSet) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    outcomes = data.get("outcomes")
    if data.get("set_hash") != evalset.content_hash or not isinstance(outcomes, str):
        return None
    if len(outcomes) != len(evalset.programs) or set(outcomes) - {"0", "1"}:
        return None
    return data


def _write_cached(path: Path, record: dict[str, Any]) -> None:
    """Atomically (runs of several seeds may write it at once: each has its own temporary)."""
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")


def _bits(outcomes: Sequence[bool]) -> str:
    return "".join("1" if o else "0" for o in outcomes)


async def evaluate_set(
    models: Models, sandbox: SandboxAPI, evalset: EvalSet, cfg: TrainConfig
) -> tuple[list[bool], EvalResult]:
    """Each item of `evalset` played once by the Agent (`eval_params`), in `sandbox`, or in a
    sandbox of its own when the set needs modules preloaded (reasoning-gym's)."""
    own = None
    if evalset.preload:
        own = make_sandbox(cfg.sandbox_backend, evalset.sandbox_config(cfg.sandbox))
        await own.start()
    try:
        return await evaluate_items(
            models.agent,
            own or sandbox,
            evalset.programs,
            params=eval_params(cfg),
            max_turns=cfg.play.max_turns,
            max_context_tokens=cfg.model.max_context_tokens,
        )
    finally:
        if own is not None:
            await own.aclose()


def paired_phase(
    phase: str,
    models: Models,
    sandbox: SandboxAPI,
    cfg: TrainConfig,
    run_async: Callable[[Any], Any],
    show: Callable[[str], None],
    use_cache: bool = True,
) -> dict[str, Any]:
    """The Agent on every paired set: the combined `EvalResult` JSON, plus per set its outcomes
    (a string of 0/1 in item order), content hash, errors, seconds and whether the outcomes came
    from the before-cache; for "before", the learning curve's starting point."""
    identity = model_identity(models) if use_cache and phase == "before" else None
    sets: dict[str, Any] = {}
    programs: list[Program] = []
    outcomes: list[bool] = []
    for evalset in paired_sets():
        sets[evalset.name] = _set_outcomes(
            evalset, phase, identity, models, sandbox, cfg, run_async, show
        )
        programs += evalset.programs
        outcomes += [b == "1" for b in sets[evalset.name]["outcomes"]]
    errors = sum(s["errors"] for s in sets.values())
    record: dict[str, Any] = {**result_of(programs, outcomes, errors).to_json(), "sets": sets}
    if phase == "before":
        near = paired_sets()[0]
        chosen = subset_indices(near, cfg.eval_subset)
        bits = sets[near.name]["outcomes"]
        record["near_subset_win_rate"] = sum(bits[i] == "1" for i in chosen) / len(chosen)
    return record


def _set_outcomes(
    evalset: EvalSet,
    phase: str,
    identity: dict[str, str] | None,
    models: Models,
    sandbox: SandboxAPI,
    cfg: TrainConfig,
    run_async: Callable[[Any], Any],
    show: Callable[[str], None],
) -> dict[str, Any]:
    """One set's outcomes: from the before-cache when `identity` has an entry there, else
    played (and then cached when `identity` is given)."""
    params = eval_params(cfg)
    path = None
    if identity is not None:
        path = before_cache_path(before_cache_key(identity, evalset, params, cfg))
        cached = _read_cached(path, evalset)
        if cached is not None:
            show(f"the {evalset.name} set {phase} training: from the cache ({path})")
            return {
                "items": len(evalset.programs),
                "hash": evalset.content_hash,
                "outcomes": cached["outcomes"],
                "errors": int(cached.get("errors", 0)),
                "cached": True,
                "seconds": 0.0,
            }
    show(f"evaluating on the {evalset.name} set ({len(evalset.programs)} items, {phase} training)")
    started = time.perf_counter()
    won, result = run_async(evaluate_set(models, sandbox, evalset, cfg))
    record = {
        "items": len(evalset.programs),
        "hash": evalset.content_hash,
        "outcomes": _bits(won),
        "errors": result.errors,
        "cached": False,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if path is not None:
        model = {**(identity or {}), "path": str(getattr(models.agent, "model_path", ""))}
        _write_cached(
            path,
            {
                "set": evalset.name,
                "set_hash": evalset.content_hash,
                "outcomes": record["outcomes"],
                "errors": record["errors"],
                "model": model,
                "temperature": params.temperature,
                "seconds": record["seconds"],
            },
        )
    return record


def paired_summary(evals: dict[str, Any]) -> dict[str, Any]:
    """Before against after on each paired set (`paired_bootstrap`), overall, by family and, for
    the far set, by part (held-out question families, reasoning-gym); sets whose items changed
    between the two evaluations (another version of the code) are reported as such."""
    out: dict[str, Any] = {
        "method": (
            f"paired percentile bootstrap over items ({BOOTSTRAP_RESAMPLES} resamples, seed "
            f"{BOOTSTRAP_SEED}, 95%); p_value: exact McNemar"
        ),
        "sets": {},
    }
    before, after = evals["before"]["sets"], evals["after"]["sets"]
    for evalset in paired_sets():
        name = evalset.name
        if name not in before or name not in after:
            continue
        if not before[name]["hash"] == after[name]["hash"] == evalset.content_hash:
            out["sets"][name] = {"skipped": "the set's items changed between before and after"}
            continue
        b = [c == "1" for c in before[name]["outcomes"]]
        a = [c == "1" for c in after[name]["outcomes"]]
        overall = paired_bootstrap(b, a)
        row: dict[str, Any] = {**overall.to_json(), "line": overall.line(f"{name} set")}
        row["by_family"] = {
            family: paired_bootstrap([b[i] for i in idx], [a[i] for i in idx]).to_json()
            for family, idx in evalset.families.items()
        }
        parts = _parts(evalset)
        if len(parts) > 1:
            row["by_part"] = {}
            for part, idx in parts.items():
                stat = paired_bootstrap([b[i] for i in idx], [a[i] for i in idx])
                row["by_part"][part] = {**stat.to_json(), "line": stat.line(f"  {name}, {part}")}
        out["sets"][name] = row
    return out


def _parts(evalset: EvalSet) -> dict[str, list[int]]:
    """Item indices of a set's parts: its question families, and reasoning-gym items."""
    parts: dict[str, list[int]] = {}
    for i, p in enumerate(evalset.programs):
        rgym = p.source.startswith(f"{evalset.name}:reasoning-gym:")
        parts.setdefault("reasoning-gym" if rgym else "question families", []).append(i)
    return parts


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
