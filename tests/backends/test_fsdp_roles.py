"""FSDP2 under torchrun (gloo, 2 CPU ranks) with both roles in a minibatch: the per-role
normalisers are the whole minibatch's on every rank, so the update equals one process's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

import fsdp_roles_run  # noqa: E402  (tests/backends is on sys.path)
from fsdp_run import TOLERANCE, weight_gap  # noqa: E402

from spade.backends.local import LocalBackend  # noqa: E402

pytestmark = pytest.mark.skipif(
    not dist.is_available() or sys.platform != "linux", reason="needs torch.distributed (gloo)"
)


def test_two_ranks_normalise_each_role_by_the_whole_minibatch(tmp_path: Path, _model_cache):
    config = fsdp_roles_run.CONFIG
    local = LocalBackend(config)  # also builds tiny-test into the cache before the ranks start
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc-per-node", "2", fsdp_roles_run.__file__, str(tmp_path)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-4000:]

    expected = [local.update(fsdp_roles_run.batch(i)) for i in range(2)]
    gap = weight_gap(
        torch.load(tmp_path / "weights.pt", weights_only=True), local.model.state_dict()
    )
    assert gap <= TOLERANCE, gap
    for got, want in zip(json.loads((tmp_path / "metrics.json").read_text()), expected):
        assert got.keys() == want.keys()
        assert {"pg_loss/agent", "pg_loss/designer", "entropy/designer"} <= got.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], rel=1e-4, abs=1e-6), key
    # the roles' normalisation matters on these batches: joint would train other weights
    import dataclasses

    joint = LocalBackend(
        dataclasses.replace(config, ppo=dataclasses.replace(config.ppo, role_normalisation="joint"))
    )
    for i in range(2):
        joint.update(fsdp_roles_run.batch(i))
    assert weight_gap(joint.model.state_dict(), local.model.state_dict()) > 100 * TOLERANCE
