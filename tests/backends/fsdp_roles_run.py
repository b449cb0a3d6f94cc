"""Two FSDP updates on batches that mix both roles, for tests/backends/test_fsdp_roles.py (not
collected by pytest).

    torchrun --standalone --nproc-per-node 2 tests/backends/fsdp_roles_run.py OUT

`batch(i)` is `fsdp_run.batch(i)` with every third sample a Designer's: its micro-batches are
dealt over the ranks, so a rank holds a share of each role that is not the minibatch's, and the
per-role normalisers must be the whole minibatch's for the update to equal one process's. Writes
the full weights to OUT/weights.pt and the metrics to OUT/metrics.json (rank 0).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import fsdp_run  # this folder is on sys.path: the script's own

from spade.backends.base import Sample

CONFIG = fsdp_run.CONFIG
assert CONFIG.ppo.role_normalisation == "per_role"


def batch(index: int) -> list[Sample]:
    return [
        dataclasses.replace(s, role="designer") if i % 3 == 0 else s
        for i, s in enumerate(fsdp_run.batch(index))
    ]


def main() -> None:
    import torch
    import torch.distributed as dist

    from spade.backends.fsdp import FSDPBackend, FSDPTrainer, init_distributed, serve

    out = Path(sys.argv[1])
    init_distributed()
    torch.set_num_threads(1)
    backend = FSDPBackend(CONFIG)
    metrics = []
    if dist.get_rank() == 0:
        trainer = FSDPTrainer(backend)
        metrics = [trainer.update(batch(i)) for i in range(2)]
        trainer.close()
    else:
        serve(backend)
    weights = backend.full_state_dict()
    if dist.get_rank() == 0:
        torch.save(weights, out / "weights.pt")
        (out / "metrics.json").write_text(json.dumps(metrics))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
