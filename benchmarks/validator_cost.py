"""What the copy probes (`answer_leak`) cost: the validator with and without them, in one process.

    python benchmarks/validator_cost.py [--rounds 2] [--questions]

Validates every bundled environment (seeds and held-out), and with `--questions` the question
family environments too, with `spade.envs.validate.validate_many` (4 at a time, like `spade
validate`), once with the default `ValidatorConfig` and once with the copy probes off
(`copy_seeds=(0, 0)`), alternating for `--rounds` rounds so that a busy moment hits both. Prints
seconds per round and the ratio, the copy episodes played, and what each configuration admitted
(the copy probes must reject none of these honest environments). Asserts nothing; name the CPU
(`lscpu`) next to the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import platform
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from spade.envs import bundled
from spade.envs.checks import ValidatorConfig
from spade.envs.validate import validate_many
from spade.sandbox import Sandbox
from spade.templates import questions
from spade.types import Program


def programs(with_questions: bool) -> list[Program]:
    out = bundled.seed_programs() + bundled.heldout_programs()
    if with_questions:
        out += [
            Program.from_code(questions.question_env(f), skill=questions.SKILL)
            for f in sorted(questions.FAMILIES)
        ]
    return out


async def measure(rounds: int, with_questions: bool) -> list[dict[str, object]]:
    todo = programs(with_questions)
    configs = {
        "with copy probes (default)": ValidatorConfig(),
        "without copy probes": dataclasses.replace(ValidatorConfig(), copy_seeds=(0, 0)),
    }
    rows = []
    async with Sandbox() as sandbox:
        for r in range(rounds):
            for name, cfg in configs.items():
                start = time.perf_counter()
                verdicts = await validate_many(todo, sandbox, cfg, concurrency=4)
                seconds = time.perf_counter() - start
                rejected = [
                    (p.source or p.env_id[:8], [f.check for f in v.failures])
                    for p, v in zip(todo, verdicts)
                    if not v.admitted
                ]
                rows.append(
                    {"round": r + 1, "config": name, "seconds": seconds, "rejected": rejected}
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--questions", action="store_true")
    args = parser.parse_args()
    n = len(programs(args.questions))
    rows = asyncio.run(measure(args.rounds, args.questions))
    cpu = platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    table = Table(title=f"validating {n} environments ({cpu})")
    for column in ("round", "config", "seconds", "ratio to without", "rejected"):
        table.add_column(column)
    for row in rows:
        base = next(
            x["seconds"]
            for x in rows
            if x["round"] == row["round"] and x["config"] == "without copy probes"
        )
        table.add_row(
            str(row["round"]),
            str(row["config"]),
            f"{row['seconds']:.1f}",
            f"{row['seconds'] / base:.2f}",  # type: ignore[operator]
            str(row["rejected"] or "none"),
        )
    Console().print(table)


if __name__ == "__main__":
    main()
