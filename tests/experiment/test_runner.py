"""The experiment runner (spade/experiment/runner.py) with a fake `spade train`: the plan's
running order and commands, a kill mid-run continued with --resume and no finished run redone
(by value: the launched commands and the finished runs' bytes), a changed plan refused and a
grown one run, one runner at a time, and every arm of a seed started from the same weights
across machines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest

from spade.config import UsageError
from spade.experiment.runner import (
    DEFAULT_SEEDS,
    Plan,
    _locked,
    finished_runs,
    run_experiment,
    run_name,
)
from spade.start_weights import EXIT_OTHER_START


class Done:
    """A run that has already ended with `code`."""

    def __init__(self, code: int = 0) -> None:
        self.code = code

    def poll(self) -> int | None:
        return self.code

    def stop(self) -> None:
        raise AssertionError("an ended run is never stopped")


class FakeTrain:
    """Stands in for `spade train`: a new run writes config.json and state.json, then
    summary.json; `kill_at` names a run that is 'killed' (KeyboardInterrupt, as the runner sees
    an interrupt) after its state.json, the first time it is launched."""

    def __init__(self, kill_at: str | None = None) -> None:
        self.kill_at = kill_at
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str], log: Path) -> Done:
        self.calls.append(list(args))
        log.write_text(log.read_text() + "x\n" if log.exists() else "x\n")
        if args[0] == "--resume":
            run_dir = Path(args[1])
            assert (run_dir / "state.json").exists()
        else:
            run_dir = Path(args[args.index("--run-dir") + 1])
            run_dir.mkdir(parents=True)
            (run_dir / "config.json").write_text(json.dumps(args))
            (run_dir / "state.json").write_text("{}")
            if run_dir.name == self.kill_at:
                raise KeyboardInterrupt
        (run_dir / "summary.json").write_text(json.dumps({"made_by": args}))
        return Done()


def test_the_plan_runs_seed_major_with_each_arms_flags() -> None:
    plan = Plan(seeds={"selfplay": 2, "fixed_pool": 3, "solve_rate": 1}, train_args=("--x", "1"))
    assert plan.runs() == [
        ("selfplay", 0),
        ("fixed_pool", 0),
        ("solve_rate", 0),
        ("selfplay", 1),
        ("fixed_pool", 1),
        ("fixed_pool", 2),
    ]
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    assert Plan.parse(None, None).seeds == DEFAULT_SEEDS
    parsed = Plan.parse(["selfplay:8", "fixed_pool:8"], "--ppo.kl-coef 0.2 --iterations 12")
    assert parsed.seeds == {"selfplay": 8, "fixed_pool": 8}
    assert parsed.train_args == ("--ppo.kl-coef", "0.2", "--iterations", "12")


@pytest.mark.parametrize(
    ("arms", "train_args", "message"),
    [
        (["selfplay:8", "nonsense:2"], None, "unknown arm"),
        (["selfplay"], None, "NAME:SEEDS"),
        (["selfplay:0"], None, "at least one seed"),
        (["selfplay:2"], "--seed 3", "--seed.*leave it out"),
    ],
)
def test_a_bad_plan_is_a_usage_error(arms, train_args, message) -> None:
    with pytest.raises(UsageError, match=message):
        Plan.parse(arms, train_args)


def test_a_killed_experiment_continues_without_redoing_a_finished_run(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    plan = Plan(seeds={"selfplay": 2, "fixed_pool": 2}, train_args=("--iterations", "3"))
    first = FakeTrain(kill_at="selfplay-s1")
    with pytest.raises(KeyboardInterrupt):
        run_experiment(out, plan, launch=first, show=lambda s: None, poll_seconds=0)
    assert first.calls == [
        ["--run-dir", str(out / "selfplay-s0"), "--seed", "0", "--iterations", "3"],
        [
            "--run-dir",
            str(out / "fixed_pool-s0"),
            "--seed",
            "0",
            "--no-design",
            "--iterations",
            "3",
        ],
        ["--run-dir", str(out / "selfplay-s1"), "--seed", "1", "--iterations", "3"],
    ]
    assert [r[:2] for r in finished_runs(out, plan)] == [("selfplay", 0), ("fixed_pool", 0)]
    kept = {p: p.read_bytes() for p in out.glob("*-s0/*")}

    finished: list[str] = []
    second = FakeTrain()
    lines: list[str] = []
    code = run_experiment(  # no plan given: the saved one
        out, launch=second, show=lines.append, on_finished=lambda o, p: finished.append("x")
    )
    assert code == 0
    assert second.calls == [
        ["--resume", str(out / "selfplay-s1")],
        [
            "--run-dir",
            str(out / "fixed_pool-s1"),
            "--seed",
            "1",
            "--no-design",
            "--iterations",
            "3",
        ],
    ]
    assert {p: p.read_bytes() for p in out.glob("*-s0/*")} == kept  # never touched again
    assert len(finished) == 2
    assert lines[0] == "[1/4] selfplay-s0: finished already"
    assert lines[2] == f"[3/4] selfplay-s1: continuing; its progress: {out / 'selfplay-s1.log'}"
    assert (out / "selfplay-s1.log").read_text() == "x\nx\n"  # the log is appended to
    rows = [json.loads(line) for line in (out / "runs.jsonl").open()]
    assert [r["run"] for r in rows] == [
        "selfplay-s0",
        "fixed_pool-s0",
        "selfplay-s1",
        "fixed_pool-s1",
    ]

    third = FakeTrain()
    assert run_experiment(out, launch=third, show=lambda s: None) == 0
    assert third.calls == []


def test_a_failing_run_stops_the_experiment_with_its_status(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def failing(args: list[str], log: Path) -> Done:
        calls.append(args)
        return Done(1)  # a crash (3 is `spade train`'s other-weights refusal: not a failure)

    plan = Plan(seeds={"selfplay": 2})
    assert run_experiment(tmp_path, plan, launch=failing, show=lambda s: None) == 1
    assert len(calls) == 1


def test_a_changed_plan_is_refused_and_a_second_runner_too(tmp_path: Path) -> None:
    plan = Plan(seeds={"selfplay": 1})
    assert run_experiment(tmp_path, plan, launch=FakeTrain(), show=lambda s: None) == 0
    other = Plan(seeds={"selfplay": 1}, train_args=("--iterations", "2"))
    with pytest.raises(UsageError, match="was planned as"):
        run_experiment(tmp_path, other, launch=FakeTrain(), show=lambda s: None)
    with _locked(tmp_path), pytest.raises(UsageError, match="another `spade experiment`"):
        run_experiment(tmp_path, plan, launch=FakeTrain(), show=lambda s: None)
    assert (tmp_path / run_name("selfplay", 0) / "summary.json").exists()


class Slow:
    """A run that ends after `polls` polls; counts the runs going at once."""

    going: ClassVar[list[str]] = []
    most = 0

    def __init__(self, name: str, polls: int, code: int = 0) -> None:
        self.name, self.polls, self.code = name, polls, code
        Slow.going.append(name)
        Slow.most = max(Slow.most, len(Slow.going))

    def poll(self) -> int | None:
        self.polls -= 1
        if self.polls > 0:
            return None
        if self.name in Slow.going:
            Slow.going.remove(self.name)
        return self.code

    def stop(self) -> None:
        Slow.going.remove(self.name)
        self.polls = -99


def test_two_jobs_run_two_at_a_time_in_plan_order(tmp_path: Path) -> None:
    Slow.going, Slow.most = [], 0
    started: list[str] = []

    def launch(args: list[str], log: Path) -> Slow:
        run_dir = Path(args[args.index("--run-dir") + 1])
        started.append(run_dir.name)
        run_dir.mkdir()
        (run_dir / "summary.json").write_text("{}")  # what the real run leaves when it ends
        return Slow(run_dir.name, polls=2 if run_dir.name == "selfplay-s0" else 1)

    plan = Plan(seeds={"selfplay": 2, "fixed_pool": 2})
    lines: list[str] = []
    assert run_experiment(tmp_path, plan, launch, lines.append, jobs=2, poll_seconds=0) == 0
    assert started == ["selfplay-s0", "fixed_pool-s0", "selfplay-s1", "fixed_pool-s1"]
    assert Slow.most == 2 and Slow.going == []
    # fixed_pool-s0 ends first; selfplay-s1 takes its place while selfplay-s0 still runs
    assert [line.split(":")[0] for line in lines if "finished in" in line] == [
        "[2/4] fixed_pool-s0",
        "[1/4] selfplay-s0",
        "[3/4] selfplay-s1",
        "[4/4] fixed_pool-s1",
    ]
    rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").open()]
    assert {r["jobs"] for r in rows} == {2}
    with pytest.raises(UsageError, match="--jobs"):
        run_experiment(tmp_path, plan, launch, lines.append, jobs=0)


def test_after_a_failure_the_runs_going_finish_and_no_new_one_starts(tmp_path: Path) -> None:
    Slow.going, Slow.most = [], 0
    started: list[str] = []

    def launch(args: list[str], log: Path) -> Slow:
        name = Path(args[args.index("--run-dir") + 1]).name
        started.append(name)
        return Slow(
            name, polls=1 if name == "selfplay-s0" else 4, code=5 if name == "selfplay-s0" else 0
        )

    plan = Plan(seeds={"selfplay": 2, "fixed_pool": 2})
    assert run_experiment(tmp_path, plan, launch, lambda s: None, jobs=2, poll_seconds=0) == 5
    assert started == ["selfplay-s0", "fixed_pool-s0"] and Slow.going == []


def test_an_interrupt_stops_every_run_going(tmp_path: Path) -> None:
    # two runs going when the third launch is interrupted: both are stopped, then it is raised
    Slow.going, Slow.most = [], 0

    def launch(args: list[str], log: Path) -> Slow:
        name = Path(args[args.index("--run-dir") + 1]).name
        if name == "selfplay-s1":
            raise KeyboardInterrupt
        return Slow(name, polls=10**6)

    plan = Plan(seeds={"selfplay": 2, "fixed_pool": 2})
    with pytest.raises(KeyboardInterrupt):
        run_experiment(tmp_path, plan, launch, lambda s: None, jobs=3, poll_seconds=0)
    assert Slow.most == 2 and Slow.going == []


def test_a_failing_results_writer_does_not_stop_the_runs(tmp_path: Path) -> None:
    def broken(out: Path, plan: Plan) -> None:
        raise TypeError("must be real number, not dict")

    lines: list[str] = []
    plan = Plan(seeds={"selfplay": 2})
    fake = FakeTrain()
    code = run_experiment(tmp_path, plan, fake, lines.append, on_finished=broken, poll_seconds=0)
    assert code == 0 and len(fake.calls) == 2
    assert sum("results not written (TypeError(" in line for line in lines) == 2


class Machine:
    """A fake `spade train` on a machine whose warm start hashes to `sha`: it records its start
    (or refuses a run whose record names other weights, exit 3, as `spade train` does) and
    finishes every run it starts, except `kill_at` (killed after its state.json)."""

    def __init__(self, sha: str, kill_at: str | None = None) -> None:
        self.sha, self.kill_at = sha, kill_at
        self.calls: list[str] = []

    def __call__(self, args: list[str], log: Path) -> Done:
        run_dir = Path(args[1] if args[0] == "--resume" else args[args.index("--run-dir") + 1])
        self.calls.append(run_dir.name)
        run_dir.mkdir(parents=True, exist_ok=True)
        record = run_dir / "start_model.json"
        if record.exists() and json.loads(record.read_text())["weights_sha256"] != self.sha:
            return Done(EXIT_OTHER_START)
        record.write_text(json.dumps({"weights_sha256": self.sha, "folder": "warm"}))
        (run_dir / "state.json").write_text("{}")
        if run_dir.name == self.kill_at:
            self.kill_at = None
            raise KeyboardInterrupt
        (run_dir / "summary.json").write_text("{}")
        return Done()


def test_every_arm_of_a_seed_starts_from_the_same_weights_on_whichever_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = Plan(seeds={"selfplay": 3, "fixed_pool": 3})
    amd = Machine("a" * 64, kill_at="fixed_pool-s1")
    with pytest.raises(KeyboardInterrupt):
        run_experiment(tmp_path, plan, launch=amd, show=lambda s: None)
    assert amd.calls == ["selfplay-s0", "fixed_pool-s0", "selfplay-s1", "fixed_pool-s1"]
    # seed 1's second arm was told its seed's start before its first launch
    told = json.loads((tmp_path / "fixed_pool-s1" / "start_model.json").read_text())
    assert told["weights_sha256"] == "a" * 64

    # another machine, whose warm start differs: seed 1's killed arm is left, seed 2 runs here
    lines: list[str] = []
    intel = Machine("b" * 64)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")
    assert run_experiment(tmp_path, plan, launch=intel, show=lines.append) == EXIT_OTHER_START
    assert intel.calls == ["fixed_pool-s1", "selfplay-s2", "fixed_pool-s2"]
    assert not (tmp_path / "fixed_pool-s1" / "summary.json").exists()
    assert any("fixed_pool-s1: left for a machine" in line for line in lines), lines
    assert "1 run(s) left for another machine (fixed_pool-s1)" in lines[-1]
    for name in ("selfplay-s2", "fixed_pool-s2"):
        assert json.loads((tmp_path / name / "start_model.json").read_text())["weights_sha256"] == (
            "b" * 64
        )
    rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").open()]
    assert [(r["run"], r["weights_sha256"]) for r in rows][-2:] == [
        ("selfplay-s2", "b" * 12),
        ("fixed_pool-s2", "b" * 12),
    ]
    assert [r.get("onednn_max_cpu_isa") for r in rows] == [None] * 3 + ["AVX512_CORE_BF16"] * 2
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")

    # back on the first kind of machine: the left run is finished there
    again = Machine("a" * 64)
    assert run_experiment(tmp_path, plan, launch=again, show=lambda s: None) == 0
    assert again.calls == ["fixed_pool-s1"]
    assert len(finished_runs(tmp_path, plan)) == 6


def test_a_new_arm_of_a_started_seed_is_told_the_seeds_start(tmp_path: Path) -> None:
    """A seed whose first arm finished elsewhere: its next arm is refused here, not started
    from this machine's other weights, and its record says which run it must match."""
    plan = Plan(seeds={"selfplay": 1, "fixed_pool": 1})
    run_experiment(Path(tmp_path), Plan(seeds={"selfplay": 1}), Machine("a" * 64), lambda s: None)
    (tmp_path / "plan.json").unlink()  # the same directory, planned with a second arm
    assert run_experiment(tmp_path, plan, Machine("b" * 64), lambda s: None) == EXIT_OTHER_START
    told = json.loads((tmp_path / "fixed_pool-s0" / "start_model.json").read_text())
    assert told == {"weights_sha256": "a" * 64, "folder": "warm", "why": told["why"]}
    assert "selfplay-s0" in told["why"]


def test_a_plan_grows_but_never_shrinks(tmp_path: Path) -> None:
    """More seeds or another arm (every planned arm listed): the finished runs stay, the new
    ones run, in the saved arms' order; a dropped or shrunk arm or other flags are refused."""
    small = Plan(seeds={"selfplay": 1, "fixed_pool": 1})
    assert run_experiment(tmp_path, small, launch=FakeTrain(), show=lambda s: None) == 0
    first = (tmp_path / "selfplay-s0" / "summary.json").read_bytes()
    for bad in (
        Plan(seeds={"selfplay": 2}),  # fixed_pool dropped
        Plan(seeds={"selfplay": 2, "fixed_pool": 1}, train_args=("--iterations", "2")),
    ):
        with pytest.raises(UsageError, match="may only grow"):
            run_experiment(tmp_path, bad, launch=FakeTrain(), show=lambda s: None)
    big = Plan(seeds={"fixed_pool": 2, "selfplay": 1, "solve_rate": 1})
    fake = FakeTrain()
    assert run_experiment(tmp_path, big, launch=fake, show=lambda s: None) == 0
    started = [Path(c[c.index("--run-dir") + 1]).name for c in fake.calls]
    assert started == ["solve_rate-s0", "fixed_pool-s1"]
    saved = json.loads((tmp_path / "plan.json").read_text())["seeds"]
    assert list(saved.items()) == [("selfplay", 1), ("fixed_pool", 2), ("solve_rate", 1)]
    assert (tmp_path / "selfplay-s0" / "summary.json").read_bytes() == first
    # and a plain call goes on under the grown plan; the old one is now a shrink
    assert run_experiment(tmp_path, None, launch=FakeTrain(), show=lambda s: None) == 0
    with pytest.raises(UsageError, match="may only grow"):
        run_experiment(tmp_path, small, launch=FakeTrain(), show=lambda s: None)
