"""Two warm starts on the same items: the greedy Agent on the near and far sets, paired.

    python benchmarks/warmstart_pair.py BASELINE_DIR OTHER_DIR [MORE_DIRS...]

Each model folder plays every item of `spade.evals.sets.near_set()` and `far_set()` once,
greedily, as `spade train`'s "before" does (`spade.evals.measure.measure_model` without the
Designer, through the before-cache: a model measured before costs nothing). Then one table row
per model and part (near; far, held-out question families; far, reasoning-gym; and the near set's
families that `--families` names, e.g. the ones an older warm start also trained): wins / items
with the Wilson interval, and for every model after the first the paired difference against the
first (paired bootstrap over items, `spade.evals.winrate.paired_bootstrap`) with the items gained
and lost. Name the CPU (`lscpu`) next to the numbers. Never a test: minutes per model.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spade.evals import sets as evalsets
from spade.evals.measure import measure_model
from spade.evals.winrate import paired_bootstrap, wilson


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    return next(
        (ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")),
        "unknown",
    )


def parts(families: list[str]) -> dict[str, tuple[str, list[int]]]:
    """Part name -> (set name, item indices in that set)."""
    near, far = evalsets.near_set(), evalsets.far_set()
    out: dict[str, tuple[str, list[int]]] = {"near": ("near", list(range(len(near.programs))))}
    if families:
        chosen = [i for f in families for i in near.families[f"near:{f}"]]
        out[f"near, {len(families)} named families"] = ("near", sorted(chosen))
    rgym = [i for i, p in enumerate(far.programs) if "reasoning-gym" in p.source]
    questions = [i for i in range(len(far.programs)) if i not in set(rgym)]
    out["far, held-out question families"] = ("far", questions)
    if rgym:
        out["far, reasoning-gym"] = ("far", rgym)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+", help="model folders; the first is the baseline")
    parser.add_argument("--families", nargs="*", default=[], help="near families to report apart")
    args = parser.parse_args()
    outcomes: list[dict[str, list[bool]]] = []
    for model in args.models:
        report = measure_model(
            model, designs_per_skill=0, show=lambda line: print(line, file=sys.stderr)
        )
        outcomes.append(
            {n: [c == "1" for c in report[f"agent_{n}_set"]["outcomes"]] for n in ("near", "far")}
        )
    print(f"CPU: {cpu_name()}")
    print("| part | model | greedy wins | 95% CI (Wilson) | vs the first, paired 95% CI |")
    print("|---|---|---|---|---|")
    for part, (name, idx) in parts(args.families).items():
        base = [outcomes[0][name][i] for i in idx]
        for m, (model, got) in enumerate(zip(args.models, outcomes)):
            won = [got[name][i] for i in idx]
            low, high = wilson(sum(won), len(won))
            versus = "-"
            if m:
                d = paired_bootstrap(base, won)
                versus = (
                    f"{100 * d.difference:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}] "
                    f"(+{d.improved} -{d.worsened})"
                )
            print(
                f"| {part} | {Path(model).name} | {sum(won)}/{len(won)} = {sum(won) / len(won):.1%}"
                f" | [{100 * low:.1f}, {100 * high:.1f}] | {versus} |"
            )


if __name__ == "__main__":
    main()
