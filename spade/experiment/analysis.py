"""What an experiment's finished runs show: each arm against a reference arm, paired by training
seed and by evaluation item, with intervals; a power estimate from the measured spread; and what
each arm spent (the endpoints are pre-registered in docs/replication.md).

Every run of an experiment starts from the same warm start and is evaluated greedily on the same
items (`spade.evals.sets.paired_sets`), so run r's after-outcome on item i is comparable across
arms. For arm A against reference R over the seeds both finished, with D[s, i] = after_A[s, i] -
after_R[s, i] (each -1, 0 or +1), the effect is the mean of D over seeds and items, i.e. the mean
over seeds of the per-seed difference in after-accuracy. Its interval is a two-level percentile
bootstrap: each resample draws the seeds with replacement and, independently, the items with
replacement (the same items for every seed: items are crossed with seeds), so both the
run-to-run spread and the finite item set count. The p-value is the exact sign-flip test of the
per-seed differences (all 2^n flips). The power estimate takes the per-seed differences' sd as
the truth and gives the smallest effect the design detects four times in five, and the seeds
needed for a given effect, twice: by the pre-registered normal approximation
(z_0.975 + z_0.80) * sd / sqrt(n), and by simulating the test actually used (per-seed
differences drawn normal with that sd, judged by the exact sign-flip test). The second is the one
to read with few seeds: the sign-flip test cannot reach two-sided p <= 0.05 below 6 seeds
(its smallest p is 2 / 2^n), whatever the effect.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spade.evals.sets import EvalSet, far_set, near_set
from spade.evals.winrate import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

ENDPOINTS: tuple[str, ...] = (
    "near+far",
    "near",
    "far",
    "far: question families",
    "far: reasoning-gym",
)
"""The paired endpoints, primary first: the near and far sets together, each alone, and the far
set's two parts."""


@dataclass(frozen=True)
class RunResult:
    """One finished run: its after-outcomes per endpoint, its curves and what it spent."""

    arm: str
    seed: int
    before: dict[str, list[bool]]
    after: dict[str, list[bool]]
    curve: list[tuple[int, float]]
    """(iteration, near-subset win rate); iteration 0 is the warm start's."""
    iterations: list[dict[str, Any]]
    config: dict[str, Any]


@functools.cache
def _sets() -> tuple[EvalSet, EvalSet]:
    return near_set(), far_set()


def _outcomes(evaluation: Mapping[str, Any]) -> dict[str, list[bool]]:
    """The endpoints' outcome vectors of one evaluation ("before" or "after" of eval.json); an
    endpoint whose items are not the current sets' is left out."""
    sets = evaluation.get("sets") or {}
    found: dict[str, list[bool]] = {}
    for evalset in _sets():
        row = sets.get(evalset.name)
        if not row or row.get("hash") != evalset.content_hash:
            continue
        bits = [c == "1" for c in row["outcomes"]]
        found[evalset.name] = bits
        if evalset.name == "far":
            for part, idx in evalset.parts.items():
                found[f"far: {part}"] = [bits[i] for i in idx]
    if "near" in found and "far" in found:
        found["near+far"] = found["near"] + found["far"]
    return found


def load_run(run_dir: Path, arm: str, seed: int) -> RunResult | None:
    """A finished run's results (None while it has no summary.json)."""
    if not (run_dir / "summary.json").exists():
        return None
    eval_path = run_dir / "eval.json"  # absent with --no-heldout-eval
    evals = json.loads(eval_path.read_text()) if eval_path.exists() else {}
    iterations = [json.loads(line) for line in (run_dir / "metrics.jsonl").open() if line.strip()]
    curve = []
    start = (evals.get("before") or {}).get("near_subset_win_rate")
    if start is not None:
        curve.append((0, float(start)))
    for m in iterations:
        if m.get("near_subset_win_rate") is not None:
            curve.append((int(m["iteration"]), float(m["near_subset_win_rate"])))
    return RunResult(
        arm=arm,
        seed=seed,
        before=_outcomes(evals.get("before") or {}),
        after=_outcomes(evals.get("after") or {}),
        curve=curve,
        iterations=iterations,
        config=json.loads((run_dir / "config.json").read_text()),
    )


def curve_area(curve: Sequence[tuple[int, float]]) -> float | None:
    """Area under the near-subset learning curve per iteration (trapezoids from iteration 0 to
    the last point, divided by that span): the curve's mean height, in win-rate units."""
    if len(curve) < 2:
        return None
    area = sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in itertools.pairwise(curve))
    return area / (curve[-1][0] - curve[0][0])


@dataclass(frozen=True)
class Comparison:
    """Arm against reference on one endpoint, over the seeds both finished."""

    arm: str
    reference: str
    endpoint: str
    seeds: tuple[int, ...]
    items: int
    per_seed: tuple[float, ...]
    """After-accuracy of the arm minus the reference's, per seed."""
    difference: float
    low: float
    high: float
    p_value: float
    """Exact sign-flip test of the per-seed differences (1.0 below two seeds)."""

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


def hierarchical_bootstrap(
    diffs: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """95% percentile interval of the mean of `diffs` (seeds x items), resampling seeds and
    items independently with replacement (module docstring)."""
    n_seeds, n_items = diffs.shape
    rng = np.random.default_rng(seed)
    seed_w = rng.multinomial(n_seeds, [1 / n_seeds] * n_seeds, size=resamples)
    item_w = rng.multinomial(n_items, [1 / n_items] * n_items, size=resamples)
    means = np.einsum("bs,si,bi->b", seed_w, diffs, item_w) / (n_seeds * n_items)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def sign_flip_p(per_seed: Sequence[float]) -> float:
    """Two-sided exact p-value of the mean of `per_seed` under random signs (all 2^n flips)."""
    n = len(per_seed)
    if n < 2:
        return 1.0
    observed = abs(sum(per_seed)) - 1e-12
    flips = itertools.product((1, -1), repeat=n)
    extreme = sum(abs(sum(s * d for s, d in zip(signs, per_seed))) >= observed for signs in flips)
    return extreme / 2**n


def compare(
    runs: Sequence[RunResult], arm: str, reference: str, endpoint: str
) -> Comparison | None:
    """`arm` against `reference` on `endpoint` (None without a seed both finished)."""
    mine = {r.seed: r.after[endpoint] for r in runs if r.arm == arm and endpoint in r.after}
    theirs = {r.seed: r.after[endpoint] for r in runs if r.arm == reference and endpoint in r.after}
    return compare_values(mine, theirs, arm, reference, endpoint)


def compare_values(
    mine: Mapping[int, Sequence[float]],
    theirs: Mapping[int, Sequence[float]],
    arm: str,
    reference: str,
    endpoint: str,
) -> Comparison | None:
    """Per seed, values of `arm` minus `reference`'s over the same items (one item for a
    per-run scalar such as the curve area: then the bootstrap resamples seeds only)."""
    seeds = tuple(sorted(set(mine) & set(theirs)))
    if not seeds:
        return None
    diffs = np.array(
        [np.array(mine[s], dtype=float) - np.array(theirs[s], dtype=float) for s in seeds]
    )
    per_seed = tuple(float(d) for d in diffs.mean(axis=1))
    low, high = hierarchical_bootstrap(diffs)
    return Comparison(
        arm=arm,
        reference=reference,
        endpoint=endpoint,
        seeds=seeds,
        items=diffs.shape[1],
        per_seed=per_seed,
        difference=float(diffs.mean()),
        low=low,
        high=high,
        p_value=sign_flip_p(per_seed),
    )


SIGN_FLIP_MIN_SEEDS = 6
"""The fewest seeds whose exact sign-flip test can reach two-sided p <= 0.05 (2 / 2^6)."""

POWER_MAX_SEEDS = 24
"""`power` searches seed counts up to this many (more is reported as "more than")."""


def sign_flip_power(
    effect_in_sd: float, seeds: int, simulations: int = 2000, seed: int = BOOTSTRAP_SEED
) -> float:
    """The chance that the exact sign-flip test over `seeds` per-seed differences, drawn
    independently normal with mean `effect_in_sd` and sd 1, gives two-sided p <= 0.05
    (simulated with a fixed seed; all 2^n flips up to 12 seeds, 4,096 random ones beyond)."""
    if seeds < SIGN_FLIP_MIN_SEEDS:
        return 0.0
    rng = np.random.default_rng(seed)
    draws = rng.normal(effect_in_sd, 1.0, size=(simulations, seeds))
    if seeds <= 12:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=seeds)))
    else:
        signs = np.vstack([np.ones(seeds), rng.choice([-1.0, 1.0], size=(4095, seeds))])
    flipped = np.abs(draws @ signs.T)
    observed = np.abs(draws.sum(axis=1))[:, None] - 1e-9
    p_values = (flipped >= observed).mean(axis=1)
    return float((p_values <= 0.05).mean())


def _sign_flip_detectable(seeds: int, target: float = 0.80) -> float | None:
    """The smallest effect, in sd units, that `seeds` seeds detect with power `target` by the
    sign-flip test (bisection; None below SIGN_FLIP_MIN_SEEDS)."""
    if seeds < SIGN_FLIP_MIN_SEEDS:
        return None
    low, high = 0.0, 8.0
    for _ in range(14):
        middle = (low + high) / 2
        low, high = (low, middle) if sign_flip_power(middle, seeds) >= target else (middle, high)
    return high


def power(per_seed: Sequence[float], effect: float = 0.03) -> dict[str, Any]:
    """From the measured per-seed differences: their sd, and with it as the truth, the smallest
    effect detected with 80% power at two-sided 5% with this many seeds and the seeds needed for
    `effect`, by the normal approximation and by the sign-flip test itself (module docstring;
    `detectable_sign_flip` is None below SIGN_FLIP_MIN_SEEDS seeds, `seeds_for_effect_sign_flip`
    None when more than POWER_MAX_SEEDS are needed)."""
    n = len(per_seed)
    empty = {"seeds": n, "sd": None, "detectable": None, "seeds_for_effect": None}
    if n < 2:
        return empty | {
            "detectable_sign_flip": None,
            "seeds_for_effect_sign_flip": None,
            "effect": effect,
        }
    sd = statistics.stdev(per_seed)
    z = statistics.NormalDist().inv_cdf(0.975) + statistics.NormalDist().inv_cdf(0.80)
    in_sd = _sign_flip_detectable(n)
    needed = None
    for seeds in range(SIGN_FLIP_MIN_SEEDS, POWER_MAX_SEEDS + 1):
        if sd == 0 or sign_flip_power(effect / sd, seeds) >= 0.80:
            needed = seeds
            break
    return {
        "seeds": n,
        "sd": sd,
        "detectable": z * sd / math.sqrt(n),
        "seeds_for_effect": math.ceil((z * sd / effect) ** 2) if sd > 0 else 2,
        "detectable_sign_flip": None if in_sd is None else in_sd * sd,
        "seeds_for_effect_sign_flip": needed,
        "effect": effect,
    }


def _sum(iterations: Sequence[Mapping[str, Any]], key: str, role: str) -> float:
    """Sum over iterations of an update metric of `role`'s model (the shared one otherwise)."""
    total = 0.0
    for m in iterations:
        losses = m.get("loss") or {}
        update = losses.get(role) or losses.get("shared") or {}
        total += float(update.get(key, 0.0))
    return total


def compute_of(run: RunResult) -> dict[str, float]:
    """What one run spent: Agent optimizer steps, plain Agent episodes, Agent tokens trained,
    the Designer's samples, tokens trained and sampling seconds, and wall seconds."""
    its = run.iterations
    separate = bool(run.config.get("separate_designer"))
    model = run.config.get("model") or {}
    return {
        "agent_optimizer_steps": _sum(its, "optimizer_steps", "agent"),
        "plain_episodes": float(sum(m["episodes"] - m.get("hinted_episodes", 0) for m in its)),
        "agent_tokens_trained": _sum(its, "trained_tokens/agent", "agent"),
        "designer_samples": float(sum(m.get("designer_samples", 0) for m in its)),
        "designer_tokens_trained": _sum(its, "trained_tokens/designer", "designer"),
        "designer_sample_seconds": sum(m.get("time/designer_sample_s", 0.0) for m in its),
        "models": 2.0 if separate else 1.0,
        "trainable_layers": float(model.get("trainable_layers") or 0),
        "wall_seconds": sum(m.get("seconds", 0.0) for m in its),
    }


def metric(row: Mapping[str, Any], key: str) -> float | None:
    """A metrics row's value of `key`: a number, or the `mean` of an estimate with an interval
    (`new_design_regret`); None when the iteration has none."""
    value = row.get(key)
    if isinstance(value, Mapping):
        value = value.get("mean")
    return None if value is None else float(value)


def arm_curves(runs: Sequence[RunResult], arm: str, key: str) -> dict[int, list[float]]:
    """Per iteration, the values of metric `key` over the arm's runs (`near_subset` for the
    learning curve, with the warm start's at iteration 0)."""
    out: dict[int, list[float]] = {}
    for r in runs:
        if r.arm != arm:
            continue
        points = (
            r.curve
            if key == "near_subset"
            else [(m["iteration"], v) for m in r.iterations if (v := metric(m, key)) is not None]
        )
        for it, value in points:
            out.setdefault(int(it), []).append(float(value))
    return dict(sorted(out.items()))
