"""An experiment's results: the pre-registered comparisons (`spade.experiment.analysis`) over
its finished runs, written to `OUT/results.json` and `OUT/table.md` after every finished run.

The comparisons: every arm against `fixed_pool` on every endpoint (the primary one is
`selfplay`'s on near+far), and `selfplay` against each other designing arm on near+far (one
model against two, regret against solve rate, a trained against an untrained Designer); the
area under the near-subset learning curve per seed, compared the same way over seeds only.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.experiment.analysis import (
    ENDPOINTS,
    POWER_MAX_SEEDS,
    SIGN_FLIP_MIN_SEEDS,
    RunResult,
    compare,
    compare_values,
    compute_of,
    curve_area,
    load_run,
    metric,
    power,
)
from spade.experiment.runner import REFERENCE, Plan, finished_runs
from spade.files import atomic_write_text

PRIMARY = ("selfplay", REFERENCE, "near+far")
"""The pre-registered primary comparison: arm, reference, endpoint."""
AGAINST_SELFPLAY = ("separate_designer", "solve_rate", "untrained_designer", "learning_potential")
COMPUTE_KEYS = (
    "agent_optimizer_steps",
    "plain_episodes",
    "agent_tokens_trained",
    "designer_samples",
    "designer_tokens_trained",
    "designer_sample_seconds",
    "models",
    "trainable_layers",
    "wall_seconds",
)


def load_runs(out: Path, plan: Plan) -> list[RunResult]:
    runs = []
    for arm, seed, run_dir in finished_runs(out, plan):
        run = load_run(run_dir, arm, seed)
        if run is not None:
            runs.append(run)
    return runs


def summarise(out: Path, plan: Plan, runs: Sequence[RunResult] | None = None) -> dict[str, Any]:
    """The results of the plan's finished runs (module docstring; `runs`: already loaded);
    written to `OUT/results.json` and `OUT/table.md`, and returned."""
    if runs is None:
        runs = load_runs(out, plan)
    arms = [a for a in plan.seeds if any(r.arm == a for r in runs)]
    comparisons: list[dict[str, Any]] = []
    for arm in arms:
        if arm == REFERENCE:
            continue
        for endpoint in ENDPOINTS:
            c = compare(runs, arm, REFERENCE, endpoint)
            if c is not None:
                comparisons.append(c.to_json())
    if "selfplay" in arms:
        for arm in AGAINST_SELFPLAY:
            c = compare(runs, arm, "selfplay", "near+far") if arm in arms else None
            if c is not None:
                comparisons.append(c.to_json())
    areas: dict[str, dict[int, float]] = {}
    for r in runs:
        area = curve_area(r.curve)
        if area is not None:
            areas.setdefault(r.arm, {})[r.seed] = area
    for arm in arms:
        if arm == REFERENCE:
            continue
        mine = {s: [a] for s, a in areas.get(arm, {}).items()}
        theirs = {s: [a] for s, a in areas.get(REFERENCE, {}).items()}
        c = compare_values(mine, theirs, arm, REFERENCE, "near-subset curve area")
        if c is not None:
            comparisons.append(c.to_json())
    primary = next(
        (c for c in comparisons if (c["arm"], c["reference"], c["endpoint"]) == PRIMARY), None
    )
    result: dict[str, Any] = {
        "plan": plan.to_json(),
        "runs": {a: sorted(r.seed for r in runs if r.arm == a) for a in arms},
        "primary": primary,
        "power": power(primary["per_seed"]) if primary else None,
        "comparisons": comparisons,
        "arms": {a: _arm_row([r for r in runs if r.arm == a], areas.get(a, {})) for a in arms},
        "method": (
            "after-accuracy differences paired by training seed and item; 95% percentile "
            "intervals of a two-level bootstrap (seeds and items resampled independently, "
            "10,000 resamples); p: exact sign-flip test over seeds; power: from the per-seed "
            "differences' sd, by the normal approximation and by simulating the sign-flip test "
            "(spade.experiment.analysis)"
        ),
    }
    atomic_write_text(out / "results.json", json.dumps(result, indent=2) + "\n")
    atomic_write_text(out / "table.md", markdown(result) + "\n")
    return result


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _arm_row(runs: Sequence[RunResult], areas: dict[int, float]) -> dict[str, Any]:
    """An arm's accuracies before and after (mean over seeds), curve area, design rates and
    compute (mean per run)."""
    row: dict[str, Any] = {"seeds": len(runs)}
    for endpoint in ENDPOINTS:
        for when in ("before", "after"):
            rates = [
                statistics.fmean(getattr(r, when)[endpoint])
                for r in runs
                if endpoint in getattr(r, when)
            ]
            row.setdefault(endpoint, {})[when] = _mean(rates)
    row["curve_area"] = _mean(list(areas.values()))
    for key in ("valid_design_rate", "new_design_regret"):
        values = [v for r in runs for m in r.iterations if (v := metric(m, key)) is not None]
        row[key] = _mean(values)
    computes = [compute_of(r) for r in runs]
    row["compute"] = {k: _mean([c[k] for c in computes]) for k in COMPUTE_KEYS}
    return row


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _points(c: dict[str, Any]) -> str:
    return (
        f"{100 * c['difference']:+.1f} [{100 * c['low']:+.1f}, {100 * c['high']:+.1f}] "
        f"(p = {c['p_value']:.3f}; per seed {' '.join(f'{100 * d:+.1f}' for d in c['per_seed'])})"
    )


def _power_line(p: dict[str, Any]) -> str:
    """The primary's power in words: the sign-flip test's own figures, then the normal
    approximation's (pre-registered)."""
    effect = f"{100 * p['effect']:.0f} points"
    if p["detectable_sign_flip"] is None:
        now = (
            f"the sign-flip test over {p['seeds']} seeds cannot reach p <= 0.05 whatever the "
            f"effect (it needs {SIGN_FLIP_MIN_SEEDS})"
        )
    else:
        now = (
            f"with these {p['seeds']} seeds the sign-flip test detects "
            f"{100 * p['detectable_sign_flip']:.1f} points 80% of the time (two-sided 5%)"
        )
    needed = p["seeds_for_effect_sign_flip"]
    needs = (
        f"{needed} seeds would detect {effect}"
        if needed is not None
        else f"more than {POWER_MAX_SEEDS} seeds would be needed for {effect}"
    )
    return (
        f"Primary: per-seed sd {100 * p['sd']:.1f} points, taken as the truth; {now}; {needs}. "
        f"(Normal approximation: {100 * p['detectable']:.1f} points with these seeds, "
        f"{p['seeds_for_effect']} seed{'s' * (p['seeds_for_effect'] != 1)} for {effect}.)"
    )


def markdown(result: dict[str, Any]) -> str:
    """The three tables: each comparison, each arm's accuracies, each arm's compute."""
    lines = ["| comparison | endpoint | seeds | difference, points [95% CI] |", "|---|---|---|---|"]
    for c in result["comparisons"]:
        lines.append(
            f"| {c['arm']} - {c['reference']} | {c['endpoint']} | {len(c['seeds'])} "
            f"| {_points(c)} |"
        )
    p = result.get("power")
    if p and p["sd"] is not None:
        lines += ["", _power_line(p)]
    lines += [
        "",
        "| arm | seeds | near+far before -> after | near | far | reasoning-gym | curve area "
        "| valid designs | regret of new designs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, row in result["arms"].items():
        cells = [arm, str(row["seeds"])]
        for endpoint in ("near+far", "near", "far", "far: reasoning-gym"):
            cells.append(f"{_pct(row[endpoint]['before'])} -> {_pct(row[endpoint]['after'])}")
        cells += [_pct(row["curve_area"]), _pct(row["valid_design_rate"])]
        regret = row["new_design_regret"]
        cells.append("-" if regret is None else f"{regret:+.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "| arm | Agent optimizer steps | plain Agent episodes | Agent tokens trained | Designer "
        "samples trained | Designer tokens trained | Designer sampling | models x trainable "
        "layers | wall time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, row in result["arms"].items():
        c = row["compute"]
        lines.append(
            f"| {arm} | {c['agent_optimizer_steps']:.0f} | {c['plain_episodes']:.0f} | "
            f"{c['agent_tokens_trained']:.0f} | {c['designer_samples']:.0f} | "
            f"{c['designer_tokens_trained']:.0f} | {c['designer_sample_seconds'] / 60:.1f} min | "
            f"{c['models']:.0f} x {c['trainable_layers']:.0f} | {c['wall_seconds'] / 60:.1f} min |"
        )
    lines += ["", f"Method: {result['method']}."]
    return "\n".join(lines)
