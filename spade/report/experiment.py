"""`spade report EXPERIMENT_DIR`: one figure of an experiment (`spade experiment`) and its tables.

Four panels, three curves in a row above and the differences the full width below: the
near-subset learning curve of every arm (mean over seeds, band = min to max over seeds,
iteration 0 the shared warm start), the Agent's plain win rate on the environments it played,
the regret of new designs per design round (designing arms), and each comparison's paired
difference with its 95% interval (`spade.experiment.results`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spade.experiment.analysis import arm_curves
from spade.experiment.results import load_runs, summarise
from spade.experiment.runner import Plan
from spade.files import atomic_write_text


def _band(ax: Any, curves: dict[int, list[float]], label: str, color: str) -> None:
    xs = list(curves)
    ys = [sum(v) / len(v) for v in curves.values()]
    ax.plot(xs, ys, marker="o", markersize=3, color=color, label=label)
    ax.fill_between(
        xs,
        [min(v) for v in curves.values()],
        [max(v) for v in curves.values()],
        color=color,
        alpha=0.18,
        linewidth=0,
    )


def build_report(experiment: Path, out: Path | None = None) -> Path:
    """Summarise the experiment's finished runs and draw `experiment.png` and `table.md` into
    `out` (default EXPERIMENT/report); raises FileNotFoundError without a finished run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    plan_path = experiment / "plan.json"
    if not plan_path.exists():
        raise FileNotFoundError(f"{experiment} has no plan.json (`spade experiment` writes it)")
    plan = Plan.from_json(json.loads(plan_path.read_text()))
    runs = load_runs(experiment, plan)
    if not runs:
        raise FileNotFoundError(f"{experiment} holds no finished run (<arm>-s<seed>/summary.json)")
    result = summarise(experiment, plan, runs)
    arms = list(result["arms"])
    colors = {arm: f"C{i}" for i, arm in enumerate(plan.seeds)}
    # the curves side by side above, the differences the whole width below, each its own
    # subfigure: the differences' long labels would otherwise push the curves aside
    fig = plt.figure(figsize=(17, 11), layout="constrained")
    grid = fig.add_gridspec(2, 1, height_ratios=[1, 1.15])
    top, bottom = fig.add_subfigure(grid[0]), fig.add_subfigure(grid[1])
    axes = dict(zip(("curve", "pool", "regret"), top.subplots(1, 3), strict=True))
    axes["diff"] = bottom.subplots()
    fig.suptitle(
        f"{experiment.name}: lines are means over training seeds, bands span min to max",
        fontsize=11,
    )
    panels = (
        (axes["curve"], "near_subset", "near-subset win rate (greedy)", "learning curve"),
        (axes["pool"], "plain_win_rate", "plain win rate, played pool", "Agent on its own pool"),
        (axes["regret"], "new_design_regret", "hinted - plain win rate", "regret of new designs"),
    )
    for ax, key, ylabel, title in panels:
        for arm in arms:
            curves = arm_curves(runs, arm, key)
            if curves:
                n = result["arms"][arm]["seeds"]
                _band(ax, curves, f"{arm} ({n} seed{'s' if n > 1 else ''})", colors[arm])
        ax.set_xlabel("iteration")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
    ax = axes["diff"]
    rows = [c for c in result["comparisons"] if c["endpoint"] != "near-subset curve area"]
    for y, c in enumerate(reversed(rows)):
        color = colors.get(c["arm"], "black")
        ax.errorbar(
            100 * c["difference"],
            y,
            xerr=[[100 * (c["difference"] - c["low"])], [100 * (c["high"] - c["difference"])]],
            fmt="o",
            color=color,
            capsize=3,
        )
    if not rows:
        ax.text(
            0.5,
            0.5,
            "no paired comparison yet: an arm and fixed_pool\nmust share a finished seed",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
    ax.axvline(0, color="grey", linewidth=1)
    ax.set_yticks(
        range(len(rows)),
        [
            f"{c['arm']} - {c['reference']}: {c['endpoint']} (n={len(c['seeds'])})"
            for c in reversed(rows)
        ],
        fontsize=7,
    )
    ax.set_xlabel("after-accuracy difference, points (95% CI, paired by seed and item)")
    ax.set_title("paired differences")
    ax.grid(alpha=0.3, axis="x")
    out = out or experiment / "report"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "experiment.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    atomic_write_text(out / "table.md", (experiment / "table.md").read_text())
    return path
