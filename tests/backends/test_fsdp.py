"""FSDP2 training under torchrun (gloo, 2 CPU ranks) equals the local backend, and its
checkpoints resume at another world size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

import fsdp_run  # noqa: E402  (tests/backends is on sys.path)
from fsdp_run import TOLERANCE, weight_gap  # noqa: E402

from spade.backends.local import LocalBackend  # noqa: E402

RUN = Path(fsdp_run.__file__)
pytestmark = pytest.mark.skipif(
    not dist.is_available() or sys.platform != "linux", reason="needs torch.distributed (gloo)"
)


def _torchrun(ranks: int, *args: str) -> None:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc-per-node", str(ranks), str(RUN), *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, _model_cache: Path) -> Path:
    LocalBackend(fsdp_run.CONFIG)  # build tiny-test into the cache before the ranks start
    out = tmp_path_factory.mktemp("fsdp")
    _torchrun(2, "train", str(out))
    return out


def test_two_ranks_train_what_one_process_trains(trained: Path) -> None:
    local = LocalBackend(fsdp_run.CONFIG)
    expected = [local.update(fsdp_run.batch(i)) for i in range(3)]
    weights = torch.load(trained / "weights.pt", weights_only=True)
    gap = weight_gap(weights, local.model.state_dict())
    assert gap <= TOLERANCE, gap
    result = json.loads((trained / "train.json").read_text())
    for got, want in zip(result["metrics"], expected):
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=1e-4, abs=1e-6), key
    # rank 0's sampling policy holds the trained weights after every update
    assert result["policy_gap"] == 0.0
    # the weights moved: a test of equality between two runs that did nothing would pass too
    assert weight_gap(weights, LocalBackend(fsdp_run.CONFIG).model.state_dict()) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [1, 2])
def test_a_checkpoint_resumes_at_either_world_size(trained: Path, ranks: int) -> None:
    result = trained / f"resumed-{ranks}.pt"
    _torchrun(ranks, "resume", str(trained), str(result))
    resumed = torch.load(result, weights_only=False)
    local = LocalBackend(fsdp_run.CONFIG)
    for i in range(4):
        metrics = local.update(fsdp_run.batch(i))
    assert resumed["step"] == 4
    gap = weight_gap(resumed["weights"], local.model.state_dict())
    assert gap <= TOLERANCE, gap  # weights and AdamW moments came back
    assert resumed["metrics"]["pg_loss"] == pytest.approx(metrics["pg_loss"], rel=1e-4)


def test_fsdp_needs_a_process_group() -> None:
    from spade.backends.fsdp import FSDPBackend

    with pytest.raises(RuntimeError, match="process group"):
        FSDPBackend(fsdp_run.CONFIG)


@pytest.mark.slow
def test_spade_train_under_torchrun_with_the_fsdp_trainer(tmp_path: Path, _model_cache) -> None:
    LocalBackend(fsdp_run.CONFIG)  # tiny-test in the cache first
    run = tmp_path / "run"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node"]
    command += ["2", "-m", "spade", "train", "--trainer", "fsdp", "--model", "tiny-test"]
    command += ["--run-dir", str(run), "--iterations", "2", "--eval-suites", "--no-heldout-eval"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(RUN.parents[2])}
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert json.loads((run / "state.json").read_text())["iteration"] == 2
    checkpoint = run / "checkpoints" / "iter-00002" / "agent"
    assert {p.name for p in checkpoint.iterdir()} == {"dcp", "rng-0.pt", "rng-1.pt", "state.json"}
    assert json.loads((checkpoint / "state.json").read_text())["world_size"] == 2
    # without torchrun: a usage error that says how to launch it
    plain = [sys.executable, "-m", "spade", "train", "--trainer", "fsdp", "--model", "tiny-test"]
    done = subprocess.run(
        plain + ["--run-dir", str(tmp_path / "x")], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2 and "launch with torchrun" in " ".join(done.stdout.split())
