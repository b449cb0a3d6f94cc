"""Does the default run learn? `spade train` (the `tiny-cpu` recipe) once per seed, then a table.

    python benchmarks/default_run.py --seeds 0 1 2 --out runs/default   # ~25 min a seed here
    python benchmarks/default_run.py --out runs/default --table-only    # the table of what ran

Each seed is `spade train --seed S --run-dir OUT/seed-S` after the cached warm start (every seed
shares it and its cached greedy "before", so before and after are paired on the same items). A
finished seed (its `summary.json` exists) is never run again; an unfinished one is continued with
`--resume`. The table, one row per seed: wall minutes, the near and far sets before -> after with
the paired 95% interval (`spade.evals.paired.paired_summary`), the far set's parts, the
valid-design rate of each design round, the mean hinted-minus-plain win difference of the new
designs, the iterations with Agent samples and the near-subset learning curve.
Name the CPU (`lscpu`) next to the numbers; nothing here decides by time.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def run_seed(seed: int, out: Path, extra: list[str]) -> float:
    """Run (or continue) one seed; the wall seconds this call took (0 when it had finished)."""
    run_dir = out / f"seed-{seed}"
    if (run_dir / "summary.json").exists():
        return 0.0
    cmd = [sys.executable, "-m", "spade", "train"]
    if (run_dir / "state.json").exists():
        cmd += ["--resume", str(run_dir)]
    else:
        cmd += ["--seed", str(seed), "--run-dir", str(run_dir), *extra]
    started = time.monotonic()
    subprocess.run(cmd, check=True)
    seconds = time.monotonic() - started
    timing = out / "wall_seconds.json"
    walls = json.loads(timing.read_text()) if timing.exists() else {}
    walls[str(seed)] = walls.get(str(seed), 0.0) + seconds
    timing.write_text(json.dumps(walls, indent=1))
    return seconds


def _interval(row: dict[str, Any]) -> str:
    return (
        f"{row['before']:.1%} -> {row['after']:.1%} ({100 * row['difference']:+.1f} "
        f"[{100 * row['low']:+.1f}, {100 * row['high']:+.1f}]; {row['items']} items, "
        f"+{row['improved']} -{row['worsened']})"
    )


def row_of(seed: int, out: Path) -> list[str]:
    run_dir = out / f"seed-{seed}"
    summary = json.loads((run_dir / "summary.json").read_text())
    timing = out / "wall_seconds.json"
    walls = json.loads(timing.read_text()) if timing.exists() else {}
    sets = summary["eval"]["paired"]["sets"]
    near, far = sets["near"], sets["far"]
    parts = far.get("by_part", {})
    iters = summary["iterations"]
    designs = [f"{r['valid_design_rate']:.2f}" for r in iters if r.get("design_attempts")]
    regrets = [r["new_design_regret"]["mean"] for r in iters if r.get("new_design_regret")]
    updates = sum(1 for r in iters if r.get("agent_samples", 0) > 0)
    curve = [
        f"{r['near_subset_win_rate']:.2f}"
        for r in iters
        if r.get("near_subset_win_rate") is not None
    ]
    minutes = walls.get(str(seed), summary.get("time", {}).get("time/iteration_s", 0.0)) / 60
    return [
        str(seed),
        f"{minutes:.1f}",
        _interval(near),
        _interval(far),
        " / ".join(f"{k}: {_interval(v)}" for k, v in parts.items()),
        " ".join(designs),
        f"{sum(regrets) / len(regrets):+.3f}" if regrets else "-",
        f"{updates}/{len(iters)}",
        " ".join(curve),
    ]


HEAD = [
    "seed",
    "minutes",
    "near, paired 95% CI (items, gained and lost)",
    "far, paired 95% CI",
    "far parts",
    "valid designs per round",
    "regret of new designs (mean over rounds)",
    "iterations with an Agent update",
    "near subset curve",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("runs/default"))
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("extra", nargs="*", help="more `spade train` flags (after --)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        for seed in args.seeds:
            run_seed(seed, args.out, args.extra)
    cpu = platform.processor() or "unknown"
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in subprocess.run(
                ["lscpu"], capture_output=True, text=True
            ).stdout.splitlines()
            if line.startswith("Model name")
        )
    except (OSError, StopIteration):
        pass
    print(f"CPU: {cpu}")
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD))
    for seed in args.seeds:
        if (args.out / f"seed-{seed}" / "summary.json").exists():
            print("| " + " | ".join(row_of(seed, args.out)) + " |")


if __name__ == "__main__":
    main()
