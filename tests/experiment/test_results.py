"""An experiment's results (spade/experiment/analysis.py, results.py) and its figure
(spade/report/experiment.py), from run directories written here with known outcomes: the
paired differences by value, the exact sign-flip p, the two-level bootstrap interval, the power
estimate, the curve area, the compute table."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from spade.experiment.analysis import (
    _sets,
    compare,
    compute_of,
    curve_area,
    hierarchical_bootstrap,
    load_run,
    power,
    sign_flip_p,
    sign_flip_power,
)
from spade.experiment.results import summarise
from spade.experiment.runner import Plan, run_name

NEAR, FAR = _sets()


def _bits(outcomes: list[bool]) -> str:
    return "".join("1" if o else "0" for o in outcomes)


def _write_run(
    root: Path,
    arm: str,
    seed: int,
    after_near: int,
    after_far: int,
    curve: tuple[float, ...] = (0.5, 0.6),
) -> Path:
    """A finished run whose Agent won the first `after_*` items of each set after training
    (and the first half before); one design round in designing arms."""
    d = root / run_name(arm, seed)
    d.mkdir(parents=True)

    def evaluation(near: int, far: int, subset: float) -> dict:
        sets = {}
        for evalset, wins in ((NEAR, near), (FAR, far)):
            n = len(evalset.programs)
            bits = _bits([i < wins for i in range(n)])
            sets[evalset.name] = {"items": n, "hash": evalset.content_hash, "outcomes": bits}
        return {"sets": sets, "near_subset_win_rate": subset}

    evals = {
        "before": evaluation(len(NEAR.programs) // 2, len(FAR.programs) // 2, curve[0]),
        "after": evaluation(after_near, after_far, curve[-1]),
    }
    (d / "eval.json").write_text(json.dumps(evals))
    designing = arm != "fixed_pool"
    rows = []
    for it in (1, 2):
        row = {
            "iteration": it,
            "episodes": 40 + (8 if designing and it == 1 else 0),
            "hinted_episodes": 8 if designing and it == 1 else 0,
            "designer_samples": 3 if designing and it == 2 else 0,
            "seconds": 60.0,
            "time/designer_sample_s": 30.0 if designing and it == 1 else 0.0,
            "plain_win_rate": 0.4 + 0.1 * it,
            "loss": {
                "shared": {
                    "optimizer_steps": 4.0,
                    "trained_tokens/agent": 100.0 * it,
                    "trained_tokens/designer": 50.0 if designing and it == 2 else 0.0,
                }
            },
        }
        if designing and it == 1:
            regret = {"mean": 0.1, "low": -0.2, "high": 0.4, "pairs": 8}  # as the loop writes it
            row.update(valid_design_rate=0.5, new_design_regret=regret)
        if it == 2:
            row["near_subset_win_rate"] = curve[-1]
        rows.append(row)
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {"separate_designer": arm == "separate_designer", "model": {"trainable_layers": 10}}
    (d / "config.json").write_text(json.dumps(config))
    (d / "summary.json").write_text("{}")
    return d


def test_a_run_loads_its_endpoints_curve_and_compute(tmp_path: Path) -> None:
    d = _write_run(tmp_path, "selfplay", 0, after_near=200, after_far=100)
    assert load_run(tmp_path / "nothing", "selfplay", 0) is None
    run = load_run(d, "selfplay", 0)
    assert run is not None
    n_near, n_far = len(NEAR.programs), len(FAR.programs)
    assert (len(run.after["near"]), len(run.after["far"])) == (n_near, n_far)
    assert run.after["near+far"] == run.after["near"] + run.after["far"]
    parts = FAR.parts
    assert run.after["far: reasoning-gym"] == [i < 100 for i in parts["reasoning-gym"]]
    assert run.curve == [(0, 0.5), (2, 0.6)]
    compute = compute_of(run)
    assert compute["agent_optimizer_steps"] == 8 and compute["agent_tokens_trained"] == 300
    assert compute["plain_episodes"] == 80 and compute["designer_samples"] == 3
    assert compute["designer_tokens_trained"] == 50 and compute["designer_sample_seconds"] == 30
    assert (compute["models"], compute["wall_seconds"]) == (1, 120)


def test_items_from_another_version_of_the_sets_are_left_out(tmp_path: Path) -> None:
    d = _write_run(tmp_path, "selfplay", 0, after_near=200, after_far=100)
    evals = json.loads((d / "eval.json").read_text())
    evals["after"]["sets"]["far"]["hash"] = "0" * 64
    (d / "eval.json").write_text(json.dumps(evals))
    run = load_run(d, "selfplay", 0)
    assert run is not None and set(run.after) == {"near"}


def test_paired_differences_by_seed_and_item(tmp_path: Path) -> None:
    n = len(NEAR.programs) + len(FAR.programs)
    for seed, (sp, fp) in enumerate([(200, 180), (190, 190), (210, 180)]):
        _write_run(tmp_path, "selfplay", seed, after_near=sp, after_far=50)
        _write_run(tmp_path, "fixed_pool", seed, after_near=fp, after_far=50)
    runs = [
        r
        for arm in ("selfplay", "fixed_pool")
        for seed in range(3)
        if (r := load_run(tmp_path / run_name(arm, seed), arm, seed)) is not None
    ]
    c = compare(runs, "selfplay", "fixed_pool", "near+far")
    assert c is not None
    assert c.seeds == (0, 1, 2) and c.items == n
    assert c.per_seed == pytest.approx((20 / n, 0.0, 30 / n))
    assert c.difference == pytest.approx(50 / (3 * n))
    assert c.low <= c.difference <= c.high and c.low >= 0  # no resample can go below zero
    assert c.p_value == 0.5  # (+, 0, +): 4 of the 8 sign flips reach |sum| >= 50/n
    near = compare(runs, "selfplay", "fixed_pool", "near")
    assert near is not None and near.items == len(NEAR.programs)
    assert compare(runs, "selfplay", "fixed_pool", "far").difference == 0  # type: ignore[union-attr]
    assert compare(runs, "solve_rate", "fixed_pool", "near+far") is None


def test_the_bootstrap_the_sign_flip_test_and_the_power_estimate() -> None:
    constant = np.full((4, 10), 0.5)
    assert hierarchical_bootstrap(constant) == pytest.approx((0.5, 0.5))
    # one seed gains every item, one none: the seed draw dominates the spread
    split = np.array([[1.0] * 20, [0.0] * 20])
    low, high = hierarchical_bootstrap(split)
    assert 0.0 <= low < 0.5 < high <= 1.0 and hierarchical_bootstrap(split) == (low, high)
    assert sign_flip_p([0.1, 0.2, 0.3]) == 2 / 8
    assert sign_flip_p([0.1, 0.2, 0.3, 0.4, 0.5]) == 2 / 32
    assert sign_flip_p([0.1, -0.1]) == 1.0 and sign_flip_p([0.3]) == 1.0
    est = power([0.01, 0.03, 0.05, 0.07])
    sd = float(np.std([0.01, 0.03, 0.05, 0.07], ddof=1))
    z = 1.959963984540054 + 0.8416212335729143
    assert est["sd"] == pytest.approx(sd)
    assert est["detectable"] == pytest.approx(z * sd / 2)
    assert est["seeds_for_effect"] == math.ceil((z * sd / 0.03) ** 2)
    assert power([0.02])["detectable"] is None


def test_the_sign_flip_power_is_the_tests_own() -> None:
    # below six seeds the smallest two-sided p is 2 / 2^n > 0.05: no effect is ever detected
    assert sign_flip_power(100.0, 5) == 0.0 and sign_flip_power(100.0, 6) == 1.0
    assert sign_flip_power(0.0, 8) < 0.08  # the test's size: about 5% under no effect
    weak, strong = sign_flip_power(0.5, 8), sign_flip_power(1.5, 8)
    assert weak < 0.5 < strong
    three = power([0.01, 0.02, 0.03])
    assert three["detectable_sign_flip"] is None and three["detectable"] is not None
    # sd 1 point: 8 seeds of the sign-flip test need more than the normal approximation says
    eight = power([-0.005, 0.005, 0.015, 0.025, -0.005, 0.005, 0.015, 0.025])
    sd = float(np.std([-0.005, 0.005, 0.015, 0.025] * 2, ddof=1))
    assert eight["sd"] == pytest.approx(sd)
    assert eight["detectable"] < eight["detectable_sign_flip"] < 2 * eight["detectable"]
    assert sign_flip_power(eight["detectable_sign_flip"] / sd, 8) >= 0.8
    needed = eight["seeds_for_effect_sign_flip"]
    assert needed is not None and needed >= 6
    assert sign_flip_power(0.03 / sd, needed) >= 0.8
    assert needed == 6 or sign_flip_power(0.03 / sd, needed - 1) < 0.8
    # a spread too wide for the search's cap
    assert power([-0.3, 0.3, -0.2, 0.2])["seeds_for_effect_sign_flip"] is None


def test_the_curve_area_is_the_curves_mean_height() -> None:
    assert curve_area([(0, 0.5), (4, 0.7), (8, 0.7)]) == pytest.approx(0.65)
    assert curve_area([(0, 0.5)]) is None


def test_results_hold_the_primary_comparison_power_and_compute(tmp_path: Path) -> None:
    plan = Plan(seeds={"selfplay": 2, "fixed_pool": 2, "separate_designer": 1})
    for seed in range(2):
        _write_run(tmp_path, "selfplay", seed, 200 + 10 * seed, 60, curve=(0.5, 0.7))
        _write_run(tmp_path, "fixed_pool", seed, 190, 60, curve=(0.5, 0.6))
    _write_run(tmp_path, "separate_designer", 0, 195, 60)
    (tmp_path / "separate_designer-s1").mkdir()  # not in the plan's seeds: ignored
    result = summarise(tmp_path, plan)
    assert json.loads((tmp_path / "results.json").read_text()) == result
    assert result["runs"] == {"selfplay": [0, 1], "fixed_pool": [0, 1], "separate_designer": [0]}
    primary = result["primary"]
    n = len(NEAR.programs) + len(FAR.programs)
    assert primary["per_seed"] == pytest.approx([10 / n, 20 / n])
    assert result["power"]["sd"] == pytest.approx(float(np.std([10 / n, 20 / n], ddof=1)))
    kinds = {(c["arm"], c["reference"], c["endpoint"]) for c in result["comparisons"]}
    assert ("separate_designer", "selfplay", "near+far") in kinds
    assert ("selfplay", "fixed_pool", "near-subset curve area") in kinds
    area = next(c for c in result["comparisons"] if c["endpoint"] == "near-subset curve area")
    assert area["per_seed"] == pytest.approx([0.05, 0.05])  # (0.5 + 0.7)/2 - (0.5 + 0.6)/2
    fp = result["arms"]["fixed_pool"]
    assert fp["compute"]["agent_optimizer_steps"] == 8 and fp["compute"]["designer_samples"] == 0
    assert (
        fp["valid_design_rate"] is None and result["arms"]["selfplay"]["valid_design_rate"] == 0.5
    )
    assert fp["new_design_regret"] is None
    assert result["arms"]["selfplay"]["new_design_regret"] == pytest.approx(0.1)  # the mean
    table = (tmp_path / "table.md").read_text()
    assert "| selfplay - fixed_pool | near+far | 2 |" in table
    assert "the sign-flip test over 2 seeds cannot reach p <= 0.05" in table
    assert "| fixed_pool | 8 | 80 | 300 | 0 | 0 | 0.0 min | 1 x 10 | 2.0 min |" in table
    assert "| separate_designer | 8 | 80 | 300 | 3 | 50 | 0.5 min | 2 x 10 | 2.0 min |" in table


def test_the_report_draws_curves_with_bands_and_the_differences(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from spade.report.experiment import build_report

    with pytest.raises(FileNotFoundError, match=r"no plan\.json"):
        build_report(tmp_path)
    (tmp_path / "plan.json").write_text(json.dumps(Plan(seeds={"selfplay": 2}).to_json()))
    with pytest.raises(FileNotFoundError, match="no finished run"):
        build_report(tmp_path)
    _write_run(tmp_path, "selfplay", 0, 200, 60)  # one arm alone: curves, no comparison yet
    assert build_report(tmp_path).exists()
    assert json.loads((tmp_path / "results.json").read_text())["comparisons"] == []
    plan = Plan(seeds={"selfplay": 2, "fixed_pool": 2})
    (tmp_path / "plan.json").write_text(json.dumps(plan.to_json()))
    shutil.rmtree(tmp_path / "selfplay-s0")
    for seed in range(2):
        _write_run(tmp_path, "selfplay", seed, 200, 60, curve=(0.5, 0.7 + 0.05 * seed))
        _write_run(tmp_path, "fixed_pool", seed, 190, 60)
    path = build_report(tmp_path)
    assert path.name == "experiment.png" and path.stat().st_size > 20_000
    assert (tmp_path / "report" / "table.md").read_text() == (tmp_path / "table.md").read_text()
