"""The miniature replication of the paper's claim: self-play arms at equal compute, compared.

    python benchmarks/selfplay.py --out runs/replication --seeds 0 1 2     # runs, then the table
    spade report runs/replication                                         # plots experiment.json

An experiment directory holds one run directory per (arm, training seed), `<arm>-s<seed>/`, each
an ordinary `spade train` run, and `experiment.json`, the aggregate `aggregate()` writes. Every
arm runs the same recipe with the same number of iterations, the same plain Agent plays per
iteration (`play.active_envs x play.plays_per_env`) and the same update budget per iteration; arms
differ only in where the environments come from and how the Designer is rewarded:

- `selfplay`: one model in both roles, the blend reward (the paper's default);
- `fixed_pool`: `--no-design`, the Agent trains on the seed environments only (the tiny
  recipe's: the bundled seeds and the mini seeds);
- `separate_designer`: two models, each trained on its own role's samples;
- `solve_rate`: one model, the Designer rewarded by the solve rate only (no regret).

Held-out win rates are each run's `eval.json` ("before" and "after"), on environments no arm
trains on; an arm's interval pools its runs' episodes (Wilson), and the spread over training
seeds is reported beside it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.evals.winrate import wilson
from spade.files import atomic_write_text
from spade.selfplay.rundir import read_metrics
from spade.types import FRONTIER_BAND

ARMS: dict[str, tuple[str, ...]] = {
    "selfplay": (),
    "fixed_pool": ("--no-design",),
    "separate_designer": ("--separate-designer",),
    "solve_rate": ("--designer-reward", "solve_rate"),
}
"""Arm name -> the `spade train` flags that make it (on top of the shared recipe)."""


def run_name(arm: str, seed: int) -> str:
    return f"{arm}-s{seed}"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _spread(values: Sequence[float]) -> float | None:
    """Sample standard deviation over training seeds (None below two)."""
    if len(values) < 2:
        return None
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def summarise_run(run_dir: Path) -> dict[str, Any] | None:
    """One finished run's numbers (None when it has no summary yet)."""
    summary_path = run_dir / "summary.json"
    if not summary_path.exists():
        return None
    summary = json.loads(summary_path.read_text())
    metrics = summary.get("iterations") or read_metrics(run_dir / "metrics.jsonl")[0]
    evals = summary.get("eval") or {}
    out: dict[str, Any] = {"run": run_dir.name, "iterations": len(metrics)}
    for when in ("before", "after"):
        overall = (evals.get(when) or {}).get("overall")
        if overall:
            out[f"{when}_wins"] = round(overall["rate"] * overall["episodes"])
            out[f"{when}_episodes"] = overall["episodes"]
    shares = []
    for m in metrics:
        bands = m.get("bands") or {}
        total = bands.get("total") or 0
        shares.append(bands.get(FRONTIER_BAND, 0) / total if total else 0.0)
    out["frontier_share"] = shares
    valid = [m["valid_design_rate"] for m in metrics if m.get("valid_design_rate") is not None]
    out["valid_design_rate"] = _mean(valid)
    out["agent_episodes"] = sum(m.get("episodes", 0) - m.get("hinted_episodes", 0) for m in metrics)
    out["update_tokens"] = sum(m.get("update_tokens", 0) for m in metrics)
    out["agent_samples"] = sum(m.get("agent_samples", 0) for m in metrics)
    out["designer_samples"] = sum(m.get("designer_samples", 0) for m in metrics)
    out["seconds"] = sum(m.get("seconds", 0.0) for m in metrics)
    return out


def aggregate(experiment: Path, arms: Sequence[str] = tuple(ARMS)) -> dict[str, Any]:
    """Per arm: pooled held-out win rates before and after with Wilson 95% intervals, the mean
    and spread over seeds, frontier share per iteration, valid-design rate, compute and wall
    time. Written to `experiment/experiment.json` and returned."""
    result: dict[str, Any] = {"arms": {}}
    for arm in arms:
        runs = [
            r
            for d in sorted(experiment.glob(f"{arm}-s*"))
            if d.is_dir() and (r := summarise_run(d)) is not None
        ]
        if not runs:
            continue
        row: dict[str, Any] = {"runs": [r["run"] for r in runs]}
        for when in ("before", "after"):
            wins = sum(r.get(f"{when}_wins", 0) for r in runs)
            n = sum(r.get(f"{when}_episodes", 0) for r in runs)
            per_seed = [
                r[f"{when}_wins"] / r[f"{when}_episodes"] for r in runs if r.get(f"{when}_episodes")
            ]
            low, high = wilson(wins, n)
            row[when] = {
                "win_rate": wins / n if n else None,
                "ci95": [low, high],
                "episodes": n,
                "seed_mean": _mean(per_seed),
                "seed_sd": _spread(per_seed),
            }
        length = max(len(r["frontier_share"]) for r in runs)
        row["frontier_share"] = [
            _mean([r["frontier_share"][i] for r in runs if i < len(r["frontier_share"])])
            for i in range(length)
        ]
        valid = [r["valid_design_rate"] for r in runs if r["valid_design_rate"] is not None]
        row["valid_design_rate"] = _mean(valid)
        for key in ("agent_episodes", "update_tokens", "agent_samples", "designer_samples"):
            row[key] = _mean([r[key] for r in runs])
        row["seconds_per_run"] = _mean([r["seconds"] for r in runs])
        result["arms"][arm] = row
    atomic_write_text(experiment / "experiment.json", json.dumps(result, indent=2) + "\n")
    return result


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def markdown_table(result: dict[str, Any]) -> str:
    """The replication table (Markdown)."""
    lines = [
        "| arm | runs | held-out win before [95% CI] | held-out win after [95% CI] | after, "
        "seed mean ± sd | frontier share (first → last iteration) | valid designs | Agent "
        "episodes / run | update tokens / run | wall time / run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm, row in result["arms"].items():
        cells = [arm, str(len(row["runs"]))]
        for when in ("before", "after"):
            r = row[when]
            low, high = r["ci95"]
            cells.append(f"{_pct(r['win_rate'])} [{low:.1%}, {high:.1%}] (n={r['episodes']})")
        after = row["after"]
        sd = after["seed_sd"]
        cells.append(f"{_pct(after['seed_mean'])}" + ("" if sd is None else f" ± {sd:.1%}"))
        share = row["frontier_share"]
        cells.append(f"{_pct(share[0])} → {_pct(share[-1])}" if share else "-")
        cells.append(_pct(row["valid_design_rate"]))
        cells.append(f"{row['agent_episodes']:.0f}")
        cells.append(f"{row['update_tokens']:.0f}")
        cells.append(f"{row['seconds_per_run'] / 60:.1f} min")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_report(experiment: Path, out: Path | None = None) -> Path:
    """Plot `experiment.json` (re-aggregated from the runs first): held-out win rate per arm
    before and after training with 95% intervals, and the frontier share per iteration per arm.
    Writes `replication.png` and `table.md` into `out` (default `experiment/report`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = aggregate(experiment)
    if not result["arms"]:
        raise FileNotFoundError(f"{experiment} holds no finished runs (<arm>-s<seed>/summary.json)")
    out = out or experiment / "report"
    out.mkdir(parents=True, exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    arms = list(result["arms"])
    for offset, when, color in ((-0.18, "before", "#999999"), (0.18, "after", "#1f77b4")):
        xs: list[float] = []
        ys: list[float] = []
        errs: list[list[float]] = [[], []]
        for i, arm in enumerate(arms):
            r = result["arms"][arm][when]
            if r["win_rate"] is None:
                continue
            xs.append(i + offset)
            ys.append(r["win_rate"])
            errs[0].append(r["win_rate"] - r["ci95"][0])
            errs[1].append(r["ci95"][1] - r["win_rate"])
        left.bar(xs, ys, width=0.34, yerr=errs, capsize=4, color=color, label=when)
    left.set_xticks(range(len(arms)), arms, rotation=15)
    left.set_ylabel("held-out win rate (95% CI, pooled over seeds)")
    left.set_title("held-out win rate per arm")
    left.legend()
    for arm in arms:
        share = result["arms"][arm]["frontier_share"]
        right.plot(range(1, len(share) + 1), share, marker="o", label=arm)
    right.set_xlabel("iteration")
    right.set_ylabel("share of played environments in the frontier band")
    right.set_title("frontier share over time (mean over seeds)")
    right.set_ylim(0, 1)
    right.legend()
    fig.tight_layout()
    path = out / "replication.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    atomic_write_text(out / "table.md", markdown_table(result) + "\n")
    return path
