"""The Agent's win rate on candidate evaluation sets, at the play temperature and greedy.

    python benchmarks/agent_sets.py MODEL_DIR [--temperatures 1.0 0] [--seeds 4]

Sets (difficulty 1, up to 6 turns, no hints, the real sandbox):
- `mini_trained`: 2 fresh renders (render seed 999) of each mini family the warm start trains on;
- `mini_held_out`: 4 renders of each of `MINI_EVAL_FAMILIES` (never trained on);
- `eval_set`: `spade.evals.sets.eval_programs()`, the evaluation set `spade train` uses.
Prints wins / episodes with 95% Wilson intervals (the table in docs/warmstart.md). Never a test.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spade.backends.base import SamplingParams
from spade.config import ModelConfig
from spade.evals.sets import eval_programs
from spade.evals.winrate import evaluate
from spade.sandbox import Sandbox
from spade.selfplay.models import local_backend
from spade.templates.mini import MINI_EVAL_FAMILIES, MINI_FAMILIES, render_mini
from spade.types import Program


def minis(families: list[str], renders: int, rng: random.Random) -> list[Program]:
    out = []
    for family in families:
        seen: set[str] = set()
        while len(seen) < renders:
            r = render_mini(rng, family)
            if r.code not in seen:
                seen.add(r.code)
                out.append(Program.from_code(r.code, hint=r.hint, skill=r.skill, source=family))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--temperatures", type=float, nargs="+", default=[1.0, 0.0])
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    rng = random.Random(999)
    trained = [f for f in MINI_FAMILIES if f not in MINI_EVAL_FAMILIES]
    held_out = minis(list(MINI_EVAL_FAMILIES), 4, rng)  # rendered first: the docs' table
    sets = {"mini_trained": minis(trained, 2, rng), "mini_held_out": held_out}
    sets["eval_set"] = eval_programs()
    policy = local_backend(ModelConfig(model=args.model), args.model, 0)

    async def run() -> None:
        async with Sandbox() as sandbox:
            print("| set | envs | T | wins | rate [95% CI] | s |\n|---|---|---|---|---|---|")
            for name, programs in sets.items():
                for t in args.temperatures:
                    started = time.monotonic()
                    result = await evaluate(
                        policy,
                        sandbox,
                        programs,
                        seeds=range(args.seeds),
                        params=SamplingParams(max_tokens=48, temperature=t, seed=0),
                        max_turns=6,
                        kwargs={"difficulty": 1},
                    )
                    o = result.overall
                    low, high = o.interval
                    print(
                        f"| {name} | {len(programs)} | {t} | {o.wins}/{o.episodes} | "
                        f"{o.rate:.1%} [{low:.1%}, {high:.1%}] | "
                        f"{time.monotonic() - started:.0f} |",
                        flush=True,
                    )

    asyncio.run(run())


if __name__ == "__main__":
    main()
