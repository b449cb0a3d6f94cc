"""One FSDP run under torchrun, for tests/backends/test_fsdp.py (not collected by pytest).

    torchrun --standalone --nproc-per-node 2 tests/backends/fsdp_run.py train OUT
    torchrun --standalone --nproc-per-node 1 tests/backends/fsdp_run.py resume OUT RESULT

`train`: three PPO updates on `batch(0..2)` through FSDPTrainer (rank 0 drives, the others serve),
rank 0's LocalBackend policy kept in sync; then a checkpoint in OUT/ckpt, the full weights in
OUT/weights.pt and the metrics and the policy's distance to the trained weights in OUT/train.json.
`resume`: load OUT/ckpt at this world size, one more update on `batch(3)`, full weights to RESULT.
The model is tiny-test in fp32 (SPADE_CACHE_DIR must already hold it: ranks would race to build).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from spade.backends.base import PPOConfig, Sample  # noqa: E402
from spade.backends.local import LocalBackend, LocalConfig  # noqa: E402

CONFIG = LocalConfig(
    model="tiny-test",
    seed=0,
    device="cpu",
    precision="fp32",
    threads=1,
    prefix_cache_mb=0,
    # 2 minibatches of 5 samples; 96 tokens per micro-batch: 3 micro-batches of uneven sizes each,
    # so with 2 ranks one rank runs an empty pass in every minibatch
    ppo=PPOConfig(learning_rate=1e-3, weight_decay=0.1, num_minibatches=2, micro_batch_tokens=96),
)


TOLERANCE = 1e-5
"""Largest weight difference allowed between the ranks' result and one process's: fp32, the same
sums in another order (reduce-scatter over 2 ranks vs one process); measured 1.6e-6 after 3
updates at lr 1e-3 (printed on failure)."""


def weight_gap(a: dict, b: dict) -> float:
    """The largest absolute difference between two state dicts with the same keys."""
    assert set(a) == set(b)
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def batch(index: int, vocabulary: int = 200) -> list[Sample]:
    """Ten samples of 12-40 tokens with trained replies, behaviour logprobs near the model's
    (so some ratios clip and some do not) and advantages of both signs; fixed by `index`."""
    rng = random.Random(index)
    out = []
    for _ in range(10):
        n = rng.randint(12, 40)
        start = rng.randint(3, n - 4)
        ids = tuple(rng.randrange(3, vocabulary) for _ in range(n))
        mask = tuple(int(i >= start) for i in range(n))
        logprobs = tuple(-rng.uniform(6.8, 8.4) if m else 0.0 for m in mask)
        out.append(Sample(ids, mask, logprobs, rng.choice([-1.5, -0.5, 0.7, 1.2]), "agent"))
    return out


def main() -> None:
    import torch.distributed as dist

    from spade.backends.fsdp import FSDPBackend, FSDPTrainer, init_distributed, serve

    mode, out = sys.argv[1], Path(sys.argv[2])
    init_distributed()
    torch.set_num_threads(1)
    backend = FSDPBackend(CONFIG)
    rank = dist.get_rank()
    if mode == "train":
        policy = LocalBackend(CONFIG) if rank == 0 else None
        if rank == 0:
            trainer = FSDPTrainer(backend, policy)
            metrics = [trainer.update(batch(i)) for i in range(3)]
            trainer.save(out / "ckpt")
            trainer.close()
        else:
            serve(backend)
        weights = backend.full_state_dict()
        if rank == 0:
            assert policy is not None
            gap = max(
                float((policy.model.state_dict()[k] - v).abs().max()) for k, v in weights.items()
            )
            torch.save(weights, out / "weights.pt")
            (out / "train.json").write_text(json.dumps({"metrics": metrics, "policy_gap": gap}))
    else:
        backend.load(out / "ckpt")
        metrics = backend.update(batch(3))
        weights = backend.full_state_dict()
        if rank == 0:
            torch.save({"weights": weights, "step": backend.step, "metrics": metrics}, sys.argv[3])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
