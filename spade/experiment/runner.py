"""The experiment's plan and its runs: every (arm, training seed) an ordinary `spade train` run
in `OUT/<arm>-s<seed>/`, launched in a child process (`jobs` at a time: a run's torch uses one
thread, so two runs keep two cores busy), seed-major (so a partial experiment still has every arm
at its first seeds), finished runs never redone, a killed one continued with `--resume`, and the
results (`spade.experiment.results`) rewritten after every run that finishes. Runs are budgeted
in steps, so running them side by side changes their minutes, never their outcomes. Every arm
of a seed starts from the weights its first started arm recorded (`spade.start_weights`): a
machine whose warm start differs leaves those runs for another machine and goes on with the
rest.

The plan (arms, seeds per arm, the `spade train` flags every arm shares) is written to
`OUT/plan.json` by the first call; a later one may grow it (more seeds, another arm) but never
shrink it or change the flags: an experiment whose runs were made under different flags cannot
be compared. One runner at a time holds `OUT/.lock`.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from spade import start_weights
from spade.config import UsageError
from spade.files import atomic_write_text
from spade.start_weights import EXIT_OTHER_START

ARMS: dict[str, tuple[str, ...]] = {
    "selfplay": (),
    "fixed_pool": ("--no-design",),
    "solve_rate": ("--designer-reward", "solve_rate"),
    "separate_designer": ("--separate-designer",),
    "untrained_designer": ("--no-train-designer",),
    "learning_potential": ("--designer-reward", "learning_potential"),
}
"""Arm name -> the `spade train` flags that make it, on top of the shared ones:

- `selfplay`: one model in both roles, the blend reward (the paper's default);
- `fixed_pool`: `--no-design`, the Agent trains on the recipe's seed environments only;
- `solve_rate`: the Designer rewarded by the solve rate alone (learnability without regret);
- `separate_designer`: two models, each trained on its own role's samples (the Agent's model
  has the same trainable layers and optimizer steps as in `selfplay`; the Designer's is extra);
- `untrained_designer`: designs made and admitted as usual, the Designer never updated (the
  random-curriculum control);
- `learning_potential`: the Designer rewarded by learning potential (optional)."""

REFERENCE = "fixed_pool"
"""The arm every other arm is compared with; the primary comparison is `selfplay` against it."""
DEFAULT_SEEDS: dict[str, int] = {
    "selfplay": 8,
    "fixed_pool": 8,
    "solve_rate": 5,
    "separate_designer": 5,
    "untrained_designer": 5,
}
"""Training seeds per arm in the pre-registered plan (docs/replication.md): 8 for the primary
comparison, 5 for the others."""
AGENT_TOKEN_CAP = 1500
"""The pre-registered cap on Agent tokens trained per iteration (`PlayConfig.agent_token_cap`),
the same in every arm: the default recipe trained 1,175-2,575 a iteration (median 1,826) in the
six runs of sessions 18-19, so the cap binds in most iterations and an arm whose pool mixes wins
and losses more often cannot train on more tokens."""
DEFAULT_TRAIN_ARGS: tuple[str, ...] = ("--play.agent-token-cap", str(AGENT_TOKEN_CAP))


def run_name(arm: str, seed: int) -> str:
    return f"{arm}-s{seed}"


@dataclasses.dataclass(frozen=True)
class Plan:
    seeds: Mapping[str, int]
    """Arm -> its number of training seeds (seeds 0..n-1)."""
    train_args: tuple[str, ...] = DEFAULT_TRAIN_ARGS
    """`spade train` flags every run gets (after the arm's)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.seeds) - set(ARMS))
        if unknown:
            raise UsageError(f"unknown arm(s) {unknown}; the arms are {sorted(ARMS)}")
        if not self.seeds or any(n < 1 for n in self.seeds.values()):
            raise UsageError(f"every arm needs at least one seed, got {dict(self.seeds)}")
        clash = {"--seed", "--run-dir", "--resume"} & {a.split("=")[0] for a in self.train_args}
        if clash:
            raise UsageError(f"the experiment sets {sorted(clash)} itself; leave it out")

    def runs(self) -> list[tuple[str, int]]:
        """(arm, seed) in running order: seed-major, arms in plan order."""
        return [
            (arm, seed)
            for seed in range(max(self.seeds.values()))
            for arm, n in self.seeds.items()
            if seed < n
        ]

    def to_json(self) -> dict[str, Any]:
        return {"seeds": dict(self.seeds), "train_args": list(self.train_args)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        return cls(seeds=dict(data["seeds"]), train_args=tuple(data["train_args"]))

    @classmethod
    def parse(cls, arms: Sequence[str] | None, train_args: str | None) -> Plan:
        """A plan from the CLI's `NAME:SEEDS` arm specs and a shell-quoted flag string."""
        seeds = dict(DEFAULT_SEEDS)
        if arms is not None:
            seeds = {}
            for spec in arms:
                name, _, count = spec.partition(":")
                if not count.isdigit():
                    raise UsageError(f"an arm is NAME:SEEDS (e.g. selfplay:8), got {spec!r}")
                seeds[name] = int(count)
        flags = DEFAULT_TRAIN_ARGS if train_args is None else tuple(shlex.split(train_args))
        return cls(seeds=seeds, train_args=flags)


class Running(Protocol):
    """A launched run: `poll()` its exit status (None while it runs), `stop()` it."""

    def poll(self) -> int | None: ...

    def stop(self) -> None: ...


Launch = Callable[[list[str], Path], Running]
"""Starts `spade train ARGS` with its output appended to a log file."""


class _Child:
    def __init__(self, args: list[str], log: Path) -> None:
        with log.open("a") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "spade", "train", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )

    def poll(self) -> int | None:
        return self.process.poll()

    def stop(self) -> None:
        """SIGINT (the run stops between steps), then SIGKILL after two minutes."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=120)
            self.process.kill()
            self.process.wait()


def launch_train(args: list[str], log: Path) -> Running:
    """`python -m spade train ARGS` in a child process that dies with this one (on Linux), so a
    resumed experiment never finds its run still going."""
    return _Child(args, log)


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    with (out / ".lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"another `spade experiment` is running on {out}") from None
        yield


def settle_plan(out: Path, plan: Plan | None) -> Plan:
    """The experiment's plan: `plan` written on the first call, or the saved one, which `plan`,
    when given, must equal or grow (`grown`): more seeds for an arm or another arm, with every
    planned arm listed and the same shared flags. Growing never invalidates a finished run (a
    seed's runs are the same whatever else is planned); it is how an experiment gets an arm's
    last seeds where a started seed can only be finished on another kind of machine."""
    path = out / "plan.json"
    if path.exists():
        saved = Plan.from_json(json.loads(path.read_text()))
        if plan is None or plan.to_json() == saved.to_json():
            return saved
        bigger = grown(saved, plan)
        if bigger is None:
            raise UsageError(
                f"{out} was planned as {saved.to_json()}, not {plan.to_json()}: runs made under "
                "another plan cannot be compared (a plan may only grow: the same --train-args, "
                "every planned arm listed with at least its seeds); run it without "
                "--arms/--train-args to continue, or choose another directory"
            )
        atomic_write_text(path, json.dumps(bigger.to_json(), indent=2) + "\n")
        return bigger
    if plan is None:
        plan = Plan(seeds=DEFAULT_SEEDS)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(plan.to_json(), indent=2) + "\n")
    return plan


def grown(saved: Plan, plan: Plan) -> Plan | None:
    """`saved` grown to `plan` (the saved arms first, in their order, then the new ones), or
    None where `plan` would drop or shrink an arm or change the shared flags."""
    if plan.train_args != saved.train_args:
        return None
    if any(plan.seeds.get(arm, 0) < n for arm, n in saved.seeds.items()):
        return None
    order = [*saved.seeds, *(arm for arm in plan.seeds if arm not in saved.seeds)]
    return Plan(seeds={arm: plan.seeds[arm] for arm in order}, train_args=saved.train_args)


def run_experiment(
    out: Path,
    plan: Plan | None = None,
    launch: Launch = launch_train,
    show: Callable[[str], None] = print,
    on_finished: Callable[[Path, Plan], object] | None = None,
    jobs: int = 1,
    poll_seconds: float = 2.0,
) -> int:
    """Run every unfinished run of the plan (module docstring), up to `jobs` at once, in plan
    order; `on_finished` (the results writer) after each run that finishes. Returns 0, or the
    first failing run's exit status (after the runs still going have finished; none is started
    after a failure). An interrupt stops the runs going and is raised again."""
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out):
        plan = settle_plan(out, plan)
        todo = plan.runs()
        waiting: list[tuple[int, str, int]] = []
        for k, (arm, seed) in enumerate(todo, 1):
            if _finished(out, arm, seed):
                show(f"[{k}/{len(todo)}] {run_name(arm, seed)}: finished already")
            else:
                waiting.append((k, arm, seed))
        running: dict[tuple[str, int], tuple[str, Running, float]] = {}
        walls: list[float] = []
        elsewhere: list[str] = []  # runs this machine cannot pair (start_weights)
        failed = 0
        try:
            while (waiting and not failed) or running:
                while waiting and len(running) < jobs and not failed:
                    k, arm, seed = waiting.pop(0)
                    tag = f"[{k}/{len(todo)}] {run_name(arm, seed)}"
                    args = _command(out, plan, arm, seed)
                    eta = ""
                    if walls:
                        left = (len(waiting) + len(running) + 1) / jobs
                        eta = f", about {left * sum(walls) / len(walls) / 60:.0f} min left"
                    log = out / f"{run_name(arm, seed)}.log"
                    verb = "continuing" if args[0] == "--resume" else "starting"
                    if verb == "starting":
                        _pair_start(out, plan, arm, seed)
                    show(f"{tag}: {verb}{eta}; its progress: {log}")
                    running[(arm, seed)] = (tag, launch(args, log), time.monotonic())
                ended = [
                    (key, code) for key, r in running.items() if (code := r[1].poll()) is not None
                ]
                if not ended:
                    time.sleep(poll_seconds)
                for (arm, seed), code in ended:
                    tag, _, started = running.pop((arm, seed))
                    if code == EXIT_OTHER_START:
                        show(
                            f"{tag}: left for a machine whose warm start is the one seed {seed} "
                            "started from (this one differs; see its log)"
                        )
                        elsewhere.append(run_name(arm, seed))
                        continue
                    if code != 0:
                        show(f"{tag}: `spade train` exited {code}; see its log")
                        failed = failed or code
                        continue
                    walls.append(time.monotonic() - started)
                    show(f"{tag}: finished in {walls[-1] / 60:.1f} min")
                    _log_run(out, arm, seed, walls[-1], jobs)
                    if on_finished is not None:
                        try:
                            on_finished(out, plan)
                        except Exception as err:  # noqa: BLE001 - the runs matter more than tables
                            show(
                                f"results not written ({err!r}); the runs go on, and "
                                f"`spade experiment {out} --table-only` writes them later"
                            )
        except BaseException:
            for _, child, _ in running.values():
                child.stop()
            raise
    if elsewhere and not failed:
        show(
            f"{len(elsewhere)} run(s) left for another machine ({', '.join(elsewhere)}): their "
            "seeds started from weights this machine's warm start does not reproduce"
        )
        return EXIT_OTHER_START
    return failed


def _command(out: Path, plan: Plan, arm: str, seed: int) -> list[str]:
    """`spade train`'s arguments for a run: continue it, or start it with its arm's flags."""
    run_dir = out / run_name(arm, seed)
    if (run_dir / "state.json").exists():
        return ["--resume", str(run_dir)]
    return ["--run-dir", str(run_dir), "--seed", str(seed), *ARMS[arm], *plan.train_args]


def _pair_start(out: Path, plan: Plan, arm: str, seed: int) -> None:
    """Before a run's first start: the weights its seed's first started arm recorded, into its
    run directory, so that `spade train` refuses to start it from others (every arm of a seed
    starts from the same warm start: the pairing the analysis relies on)."""
    run_dir = out / run_name(arm, seed)
    if start_weights.recorded(run_dir) is not None:
        return
    for other, s in plan.runs():
        start = start_weights.recorded(out / run_name(other, s))
        if s == seed and other != arm and start is not None:
            why = f"the start of {run_name(other, s)}, the same seed"
            start_weights.record(run_dir, {**start, "why": why})
            return


def _finished(out: Path, arm: str, seed: int) -> bool:
    return (out / run_name(arm, seed) / "summary.json").exists()


def finished_runs(out: Path, plan: Plan) -> list[tuple[str, int, Path]]:
    """The plan's finished runs, in running order."""
    return [
        (arm, seed, out / run_name(arm, seed))
        for arm, seed in plan.runs()
        if _finished(out, arm, seed)
    ]


def _log_run(out: Path, arm: str, seed: int, seconds: float, jobs: int) -> None:
    """One line in `OUT/runs.jsonl` per launch that finished a run: its wall seconds (of this
    launch), the runs allowed at once beside it, the machine it ran on (and the oneDNN kernels,
    where capped) and the weights it started from."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    row = {"run": run_name(arm, seed), "seconds": round(seconds, 1), "cpu": cpu}
    start = start_weights.recorded(out / run_name(arm, seed)) or {}
    row["weights_sha256"] = start_weights.short(str(start.get("weights_sha256", "")))
    row["cores"] = os.cpu_count()
    row["jobs"] = jobs
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA")  # kernels capped: docs/warmstart.md
    if isa:
        row["onednn_max_cpu_isa"] = isa
    with (out / "runs.jsonl").open("a") as f:
        f.write(json.dumps(row) + "\n")
