"""The paired near and far sets (`spade.evals.sets.paired_sets`) before and after training: each
item played once by the Agent, greedily by default (`eval_temperature`), the "before" of a model
folder through the before-cache (`spade.evals.before_cache`), and the two compared item by item
(`paired_summary`, `spade.evals.winrate.paired_bootstrap`), overall, by family and by part.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from spade.backends.base import Models, SamplingParams
from spade.config import TrainConfig
from spade.evals.before_cache import (
    before_cache_key,
    before_cache_path,
    model_identity,
    read_cached,
    write_cached,
)
from spade.evals.sets import EvalSet, paired_sets, subset_indices
from spade.evals.winrate import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    EvalResult,
    evaluate_items,
    paired_bootstrap,
    result_of,
)
from spade.sandbox import SandboxAPI, make_sandbox
from spade.types import Program

EVAL_SAMPLE_SEED = 7
"""Sampling seed of the paired evaluations when `eval_temperature` > 0: fixed, not the run's
seed, so runs of every seed share a sampled "before" too and before and after draw alike."""


def eval_params(cfg: TrainConfig) -> SamplingParams:
    """Sampling of the paired evaluations and the learning curve: greedy unless
    `eval_temperature` > 0, the Agent's reply length."""
    return SamplingParams(
        max_tokens=cfg.play.max_tokens, temperature=cfg.eval_temperature, seed=EVAL_SAMPLE_SEED
    )


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
        cached = read_cached(path, evalset)
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
        write_cached(
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
        parts = evalset.parts
        if len(parts) > 1:
            row["by_part"] = {}
            for part, idx in parts.items():
                stat = paired_bootstrap([b[i] for i in idx], [a[i] for i in idx])
                row["by_part"][part] = {**stat.to_json(), "line": stat.line(f"  {name}, {part}")}
        out["sets"][name] = row
    return out
