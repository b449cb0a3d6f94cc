"""The replication's aggregation (spade/report/experiment.py): pooled intervals, seed spread,
compute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade.evals.winrate import wilson
from spade.report.experiment import aggregate, markdown_table, run_name, summarise_run


def _run(root: Path, arm: str, seed: int, before: tuple[int, int], after: tuple[int, int]) -> None:
    d = root / run_name(arm, seed)
    d.mkdir(parents=True)
    iterations = [
        {
            "iteration": i,
            "episodes": 40,
            "hinted_episodes": 8 if arm != "fixed_pool" else 0,
            "update_tokens": 1000 + i,
            "agent_samples": 10,
            "designer_samples": 2,
            "seconds": 30.0,
            "valid_design_rate": 0.5 if arm != "fixed_pool" and i % 2 else None,
            "bands": {"frontier": i, "mastered": 1, "out_of_reach": 4 - i, "total": 5},
        }
        for i in (1, 2, 3)
    ]

    def overall(wins: int, n: int) -> dict:
        return {"overall": {"rate": wins / n, "episodes": n}}

    summary = {
        "iterations": iterations,
        "eval": {"before": overall(*before), "after": overall(*after)},
    }
    (d / "summary.json").write_text(json.dumps(summary))


def test_aggregate_pools_episodes_and_reports_the_seed_spread(tmp_path: Path) -> None:
    _run(tmp_path, "selfplay", 0, (4, 20), (6, 20))
    _run(tmp_path, "selfplay", 1, (4, 20), (10, 20))
    _run(tmp_path, "fixed_pool", 0, (4, 20), (5, 20))
    (tmp_path / run_name("solve_rate", 0)).mkdir()  # started, not finished: ignored
    result = aggregate(tmp_path)
    assert set(result["arms"]) == {"selfplay", "fixed_pool"}
    sp = result["arms"]["selfplay"]
    assert sp["runs"] == ["selfplay-s0", "selfplay-s1"]
    assert sp["after"]["win_rate"] == 16 / 40 and sp["after"]["episodes"] == 40
    assert sp["after"]["ci95"] == list(wilson(16, 40))
    assert sp["after"]["seed_mean"] == pytest.approx(0.4)
    assert sp["after"]["seed_sd"] == pytest.approx(((0.1**2 + 0.1**2) / 1) ** 0.5)
    assert sp["frontier_share"] == [0.2, 0.4, 0.6]
    assert sp["valid_design_rate"] == 0.5
    assert sp["agent_episodes"] == 3 * 32 and sp["update_tokens"] == 3006
    fp = result["arms"]["fixed_pool"]
    assert fp["valid_design_rate"] is None and fp["agent_episodes"] == 120
    assert fp["after"]["seed_sd"] is None  # one seed: no spread
    assert json.loads((tmp_path / "experiment.json").read_text()) == result
    table = markdown_table(result)
    assert "| selfplay | 2 | 20.0% [" in table and "40.0% ± 14.1%" in table
    assert "| fixed_pool | 1 |" in table and "20.0% → 60.0%" in table


def test_an_unfinished_run_has_no_summary(tmp_path: Path) -> None:
    (tmp_path / "selfplay-s0").mkdir()
    assert summarise_run(tmp_path / "selfplay-s0") is None
    assert aggregate(tmp_path) == {"arms": {}}


def test_experiment_report_draws_the_comparison(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from spade.report.experiment import build_report

    _run(tmp_path, "selfplay", 0, (4, 20), (6, 20))
    _run(tmp_path, "fixed_pool", 0, (4, 20), (5, 20))
    path = build_report(tmp_path)
    assert path.stat().st_size > 10_000 and (tmp_path / "report" / "table.md").exists()
    with pytest.raises(FileNotFoundError, match="no finished runs"):
        build_report(tmp_path / "report")
