"""Copy what an experiment's analysis reads into a folder that git tracks (runs/ is ignored).

    python benchmarks/replication_snapshot.py runs/replication27 docs/replication27

Copies the experiment's plan.json, results.json, table.md and runs.jsonl, and of each finished
run its config.json, eval.json, metrics.jsonl, summary.json and start_model.json (no weights,
no pool), so `spade experiment DEST --table-only` and `spade report DEST` work on the copy, and
on a fresh machine the finished runs copied back into the experiment's folder are not redone
and still tell their seeds' other arms which weights to start from. Prints what it copied; run
it after `spade experiment` finishes a run, then commit DEST.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

TOP = ("plan.json", "results.json", "table.md", "runs.jsonl")
PER_RUN = ("config.json", "eval.json", "metrics.jsonl", "summary.json", "start_model.json")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("experiment", type=Path)
    parser.add_argument("dest", type=Path)
    args = parser.parse_args()
    if not (args.experiment / "plan.json").exists():
        print(f"{args.experiment} has no plan.json", file=sys.stderr)
        return 2
    args.dest.mkdir(parents=True, exist_ok=True)
    copied = 0
    for name in TOP:
        if (args.experiment / name).exists():
            shutil.copy2(args.experiment / name, args.dest / name)
            copied += 1
    runs = 0
    for run in sorted(p for p in args.experiment.iterdir() if (p / "summary.json").exists()):
        (args.dest / run.name).mkdir(exist_ok=True)
        for name in PER_RUN:
            if (run / name).exists():
                shutil.copy2(run / name, args.dest / run.name / name)
                copied += 1
        runs += 1
    print(f"copied {copied} files of {runs} finished runs to {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
