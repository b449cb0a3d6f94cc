"""The miniature replication (issue 11): self-play arms at equal compute, 3+ training seeds each.

    python benchmarks/selfplay.py --out runs/replication --seeds 0 1 2 [-- extra spade train flags]

Runs `spade train` once per (arm, seed) in a child process (arms in `spade.report.experiment.ARMS`),
skipping runs that already finished and resuming ones that were killed, so the whole experiment
can be stopped and restarted. Then prints the table (`spade.report.experiment.markdown_table`),
writes `OUT/experiment.json` and `OUT/table.md`; `spade report OUT` plots it. Every arm gets the
same recipe, iterations, plain plays per iteration and update budget; the table shows the Agent
episodes and update tokens each arm actually used, so "equal compute" can be checked.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spade.report.experiment import ARMS, aggregate, markdown_table, run_name  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/replication"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--iterations", type=int, default=None, help="override the recipe's")
    parser.add_argument("extra", nargs="*", help="more `spade train` flags (after --)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    common = list(args.extra)
    if args.iterations is not None:
        common += ["--iterations", str(args.iterations)]
    (args.out / "command.json").write_text(json.dumps({"argv": sys.argv, "common": common}) + "\n")
    for seed in args.seeds:  # seed-major: a partial experiment still compares every arm
        for arm in args.arms:
            run_dir = args.out / run_name(arm, seed)
            if (run_dir / "summary.json").exists():
                print(f"[{arm} seed {seed}] done already", flush=True)
                continue
            cmd = [sys.executable, "-m", "spade", "train"]
            if (run_dir / "state.json").exists():
                cmd += ["--resume", str(run_dir)]
            else:
                cmd += ["--run-dir", str(run_dir), "--seed", str(seed), *ARMS[arm], *common]
            started = time.monotonic()
            print(f"[{arm} seed {seed}] {' '.join(cmd[2:])}", flush=True)
            with open(args.out / f"{run_name(arm, seed)}.log", "a") as log:
                code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
            print(
                f"[{arm} seed {seed}] exit {code} in {time.monotonic() - started:.0f} s", flush=True
            )
            if code != 0:
                return code
    result = aggregate(args.out, args.arms)
    table = markdown_table(result)
    (args.out / "table.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
