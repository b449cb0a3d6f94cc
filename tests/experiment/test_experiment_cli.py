"""`spade experiment` for real (the CLI, `spade train` child processes, the `tiny-test` model):
SIGKILLed while its second run is going, the run's own `spade train` dies with it, and the same
command afterwards continues that run and leaves the finished one byte for byte alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.cli import COMMAND

TRAIN_ARGS = (
    "--model tiny-test --iterations 3 --no-heldout-eval --design.envs-per-regen 2 "
    "--design.active-skills 1 --design.max-tokens 48 --play.plays-per-env 4 "
    "--play.active-envs 2 --play.max-tokens 8 --validator.probe-seeds 1 "
    "--validator.solution-seeds 1 --sandbox.warm-workers 1"
)


def _wait_for(path: Path, process: subprocess.Popen, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process.poll() is None, f"the experiment ended before {path} appeared"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def _trainers_of(run_dir: Path) -> list[int]:
    """Pids of live processes whose command line names `run_dir`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if str(run_dir) in cmdline and "train" in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids


@pytest.mark.slow
def test_a_killed_experiment_continues_where_it_stopped(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    args = [*COMMAND, "experiment", str(out), "--arms", "selfplay:1", "fixed_pool:1"]
    args.append(f"--train-args={TRAIN_ARGS}")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    _wait_for(out / "fixed_pool-s0" / "state.json", first)  # its first iteration is committed
    first.send_signal(signal.SIGKILL)
    first.wait()
    deadline = time.monotonic() + 30
    while _trainers_of(out / "fixed_pool-s0"):  # PR_SET_PDEATHSIG: the child goes too
        assert time.monotonic() < deadline, "the run's spade train outlived the experiment"
        time.sleep(0.2)
    finished = out / "selfplay-s0" / "summary.json"
    assert finished.exists() and not (out / "fixed_pool-s0" / "summary.json").exists()
    # both arms of the seed start from the same recorded weights, the second told by the runner
    first_start, second_start = (
        json.loads((out / run / "start_model.json").read_text())
        for run in ("selfplay-s0", "fixed_pool-s0")
    )
    assert first_start["weights_sha256"] == second_start["weights_sha256"]
    assert "selfplay-s0" in second_start["why"]
    kept = {
        p: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in (out / "selfplay-s0").rglob("*")
        if p.is_file()
    }

    again = subprocess.run(
        [*COMMAND, "experiment", str(out)], env=env, capture_output=True, text=True, timeout=900
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "[1/2] selfplay-s0: finished already" in again.stdout
    assert "[2/2] fixed_pool-s0: continuing" in again.stdout
    assert (out / "fixed_pool-s0" / "summary.json").exists()
    after = {
        p: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in (out / "selfplay-s0").rglob("*")
        if p.is_file()
    }
    assert after == kept
    metrics = [json.loads(line) for line in (out / "fixed_pool-s0" / "metrics.jsonl").open()]
    assert [m["iteration"] for m in metrics] == [1, 2, 3]  # resumed, not started over
    results = json.loads((out / "results.json").read_text())
    assert results["runs"] == {"selfplay": [0], "fixed_pool": [0]}
