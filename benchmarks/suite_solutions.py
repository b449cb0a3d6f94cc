"""Replay every reasoning-gym dataset's known answers through the adapter (`--policy solution`):
the share won per dataset and level (default configuration, curriculum levels 1 and 3), which must
be at least 98%. Prints one JSON line per cell, then a summary.

    python benchmarks/suite_solutions.py [--limit 10] [--levels default 1 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from spade.evals.suites import suite_programs, suite_sandbox_config
from spade.evals.suites.rgym import datasets
from spade.evals.winrate import evaluate_solutions
from spade.sandbox import Sandbox


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--levels", nargs="+", default=["default", "1", "3"])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from reasoning_gym import factory

    from spade.evals.suites.rgym import NO_REFERENCE

    rows = []

    async def run() -> None:
        async with Sandbox(suite_sandbox_config("reasoning-gym")) as sandbox:
            for name in [d for d in datasets() if d not in NO_REFERENCE]:
                for lv in args.levels:
                    level = None if lv == "default" else int(lv)
                    if level is not None and not factory.has_curriculum(name):
                        continue
                    started = time.perf_counter()
                    try:
                        programs = suite_programs(
                            f"reasoning-gym:{name}", limit=args.limit, level=level
                        )
                        result = await evaluate_solutions(sandbox, programs, seeds=[0], max_turns=1)
                        row = {
                            "dataset": name,
                            "level": lv,
                            "wins": result.overall.wins,
                            "episodes": result.overall.episodes,
                            "errors": result.errors,
                        }
                    except ValueError as exc:  # a level the adapter refuses, and why
                        row = {"dataset": name, "level": lv, "refused": str(exc)[:200]}
                    except Exception as exc:  # noqa: BLE001 - a dataset the adapter cannot build
                        row = {"dataset": name, "level": lv, "error": repr(exc)[:200]}
                    row["seconds"] = round(time.perf_counter() - started, 2)
                    rows.append(row)
                    print(json.dumps(row), flush=True)

    asyncio.run(run())
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    played = [r for r in rows if "refused" not in r]
    bad = [r for r in played if "error" in r or r["wins"] < 0.98 * r["episodes"]]
    print(
        f"{len({r['dataset'] for r in rows})} datasets ({len(NO_REFERENCE)} without a reference "
        f"answer not replayed: {', '.join(sorted(NO_REFERENCE))}); "
        f"{len(played) - len(bad)} of {len(played)} (dataset, level) cells at >= 98%, "
        f"{len(rows) - len(played)} levels refused by the adapter:"
    )
    for r in rows:
        if "refused" in r:
            print(f"  refused: {r['refused']}")
    for r in bad:
        print(f"  below 98%: {json.dumps(r)}")


if __name__ == "__main__":
    main()
