"""What reinforcement learning could still win: greedy vs pass@k on the paired evaluation sets.

    python benchmarks/headroom.py --model WARM_START_FOLDER                  # near set, k=8
    python benchmarks/headroom.py --model DIR --sets near far --k 16 --show 3

Each item of the near (and far) set of `spade.evals.sets` is played once greedily and `--k` times at
`--temperature` (episode seed 0, the evaluation's; sampling seeds fixed), in the real sandbox.
An item the greedy Agent loses but some sample wins is headroom a policy-gradient update can
reach (it raises the probability of replies it sees rewarded); an item no sample wins is out of
its reach without a better model. The table, per family and overall: greedy win rate, the mean
sampled win rate, pass@k, and the count of greedy-lost items with at least one sampled win.
`--show N` prints up to N greedy-lost replies per family (what the errors look like).

Never a test: minutes on the default model.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spade.backends.base import SamplingParams
from spade.backends.local import LocalBackend, LocalConfig
from spade.evals import sets as evalsets
from spade.sandbox import Sandbox, SandboxConfig
from spade.selfplay.rollout import PlayRequest, play


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


async def run(args: argparse.Namespace) -> None:
    backend = LocalBackend(LocalConfig(model=args.model, threads=args.threads, seed=args.seed))
    sets = {"near": evalsets.near_set, "far": evalsets.far_set}
    print(f"CPU: {cpu_name()}; model {args.model}; k={args.k} at T={args.temperature}")
    for name in args.sets:
        evalset = sets[name]()
        sandbox = Sandbox(evalset.sandbox_config(SandboxConfig()))
        await sandbox.start()
        try:
            start = time.monotonic()
            greedy = await play(
                backend,
                sandbox,
                [PlayRequest(p, 0) for p in evalset.programs],
                params=SamplingParams(max_tokens=args.max_tokens, temperature=0.0),
                max_turns=args.max_turns,
            )
            sampled = await play(
                backend,
                sandbox,
                [PlayRequest(p, 0) for p in evalset.programs for _ in range(args.k)],
                params=SamplingParams(
                    max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed
                ),
                max_turns=args.max_turns,
            )
            seconds = time.monotonic() - start
        finally:
            await sandbox.aclose()
        print(f"\n## {name} set ({len(evalset.programs)} items, {seconds:.0f} s)\n")
        print("| family | items | greedy | sampled mean | pass@k | greedy-lost, some sample won |")
        print("|---|---|---|---|---|---|")
        totals = [0, 0, 0.0, 0, 0]
        shown: list[str] = []
        for family, indices in evalset.families.items():
            g = [greedy[i].return_ > 0 for i in indices]
            s = [[sampled[i * args.k + j].return_ > 0 for j in range(args.k)] for i in indices]
            mean = sum(sum(row) for row in s) / (len(indices) * args.k)
            passk = sum(any(row) for row in s)
            reach = sum(1 for gi, row in zip(g, s) if not gi and any(row))
            n = len(indices)
            print(f"| {family} | {n} | {sum(g) / n:.0%} | {mean:.0%} | {passk / n:.0%} | {reach} |")
            totals[0] += n
            totals[1] += sum(g)
            totals[2] += mean * n
            totals[3] += passk
            totals[4] += reach
            lost = [i for i, gi in zip(indices, g) if not gi][: args.show]
            for i in lost:
                c = greedy[i].completions
                reply = c[0].text if c else "(no reply)"
                first = greedy[i].episode.first_observation
                shown.append(f"{family}: {first.strip()[:120]!r} -> {reply.strip()[:80]!r}")
        n = totals[0]
        print(
            f"| **all** | {n} | {totals[1] / n:.1%} | {totals[2] / n:.1%} | {totals[3] / n:.1%} "
            f"| {totals[4]} ({totals[4] / n:.1%} of items) |"
        )
        if shown:
            print("\nGreedy-lost replies:")
            for line in shown:
                print("  " + line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2", help="a model folder (the warm start)")
    parser.add_argument("--sets", nargs="+", choices=["near", "far"], default=["near"])
    parser.add_argument("--k", type=int, default=8, help="samples per item")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=0, help="greedy-lost replies per family")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
