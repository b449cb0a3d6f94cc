"""`spade experiment OUT`: the replication's arms over many training seeds, resumable."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import tyro


def experiment(
    out: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="OUT")],
    /,
    arms: tuple[str, ...] | None = None,
    train_args: str | None = None,
    jobs: int = 1,
    table_only: bool = False,
) -> int:
    """Run the self-play replication: `spade train` once per arm and training seed, paired.

    Runs `--jobs` at a time (a run's torch uses one thread: 2 keeps two cores busy) in
    OUT/<arm>-s<seed>/, seed-major; a finished run is never redone and a
    killed one is continued, so the same command (or plain `spade experiment OUT`) picks up
    where a stopped experiment left off. After every finished run, OUT/results.json and
    OUT/table.md hold the paired comparisons (each arm against fixed_pool, paired by seed and
    item, two-level bootstrap intervals), the power estimate and the compute per arm;
    `spade report OUT` draws them. The plan is saved in OUT/plan.json; a later call may grow it
    (--arms listing every planned arm with at least its seeds, and more or another arm; the same
    --train-args) but not shrink or change it.
    Every arm of a seed starts from the weights its first arm recorded (start_model.json); a
    run this machine's warm start cannot pair is left for another machine, the others go on,
    and the exit status is then 3.

    Args:
        out: The experiment directory.
        arms: Arms and their seed counts, NAME:SEEDS (default: selfplay:8 fixed_pool:8
            solve_rate:5 separate_designer:5 untrained_designer:5; also learning_potential).
        train_args: `spade train` flags every run shares, one shell-quoted string (default:
            "--play.agent-token-cap 1500", the pre-registered equal-compute cap).
        jobs: Runs at once (it changes their minutes, never their outcomes: they are budgeted
            in steps).
        table_only: Only rewrite results.json and table.md from the finished runs.
    """
    from spade.config import UsageError
    from spade.experiment.results import summarise
    from spade.experiment.runner import Plan, run_experiment, settle_plan

    try:
        plan = None if arms is None and train_args is None else Plan.parse(arms, train_args)
        if table_only:
            if not (out / "plan.json").exists():
                raise UsageError(f"{out} has no plan.json: nothing has been run there")
            code = 0
        else:
            code = run_experiment(out, plan, on_finished=summarise, jobs=jobs)
        summarise(out, settle_plan(out, plan))
        print((out / "table.md").read_text())
    except UsageError as err:
        print(f"spade: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"stopped; `spade experiment {out}` continues it", file=sys.stderr)
        return 130
    return code
