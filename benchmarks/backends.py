"""Throughput of the local backend: generation tokens/s at batch 1, 8, 32 and training tokens/s.

    python benchmarks/backends.py                      # tiny (~6M) and small (~26M) presets
    python benchmarks/backends.py --models tiny --max-tokens 32 --threads 2

Prints one table with ratios: batching speed-up over batch 1 and small vs tiny. Weights are
random (no warm start needed for timing); every reply runs to max_tokens, so the token count is
exact. Times are the best of --repeats runs after one warm-up. Never used as a test assertion.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spade.backends.base import PPOConfig, Sample, SamplingParams


def best_time(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(
    name: str, batches: list[int], max_tokens: int, train_len: int, train_seqs: int, repeats: int
):
    from spade.backends.local import LocalBackend, LocalConfig

    backend = LocalBackend(
        LocalConfig(model=name, ppo=PPOConfig(learning_rate=1e-5, micro_batch_tokens=4096))
    )
    backend.eot_ids = {-1}  # never stop early: every reply is exactly max_tokens long
    prompt = [
        {
            "role": "user",
            "content": "Write an environment whose step() rewards a correct \\boxed{answer}.",
        }
    ]
    row: dict[str, float] = {"params": backend.num_parameters}
    for b in batches:
        params = SamplingParams(max_tokens=max_tokens, seed=0)
        t = best_time(lambda b=b, params=params: backend.sample([prompt] * b, params), repeats)
        row[f"gen_b{b}"] = b * max_tokens / t
    vocab = len(backend.tokenizer)
    samples = [
        Sample(
            token_ids=tuple((7 * i + 13 * j) % vocab for j in range(train_len)),
            loss_mask=(0,) * (train_len // 4) + (1,) * (train_len - train_len // 4),
            logprobs=(0.0,) * (train_len // 4) + (-7.0,) * (train_len - train_len // 4),
            advantage=1.0 if i % 2 else -1.0,
            role="agent",
        )
        for i in range(train_seqs)
    ]
    t = best_time(lambda: backend.update(samples), repeats)
    row["train"] = train_seqs * train_len / t
    return row


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--models", nargs="+", default=["tiny", "small"])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 8, 32])
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--train-len", type=int, default=256, help="tokens per training sequence")
    p.add_argument("--train-seqs", type=int, default=16)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else f"cpu ({torch.get_num_threads()} threads)"
    print(
        f"device: {device}; generation: {args.max_tokens} new tokens per reply; "
        f"training: {args.train_seqs} x {args.train_len} tokens per update\n"
    )
    rows = {
        m: measure(m, args.batches, args.max_tokens, args.train_len, args.train_seqs, args.repeats)
        for m in args.models
    }

    cols = [f"gen_b{b}" for b in args.batches] + ["train"]
    header = f"{'model':<8}{'params':>9}" + "".join(f"{c + ' tok/s':>15}" for c in cols)
    header += "".join(f"{f'b{b}/b1':>9}" for b in args.batches[1:])
    print(header)
    print("-" * len(header))
    for m, r in rows.items():
        line = f"{m:<8}{r['params'] / 1e6:>8.1f}M" + "".join(f"{r[c]:>15.0f}" for c in cols)
        line += "".join(
            f"{r[f'gen_b{b}'] / r[f'gen_b{args.batches[0]}']:>9.1f}" for b in args.batches[1:]
        )
        print(line)
    if len(rows) > 1:
        base, *others = list(rows)
        for m in others:
            ratios = "  ".join(f"{c}: {rows[base][c] / rows[m][c]:.1f}x" for c in cols)
            print(f"\n{base} vs {m} (how many times faster): {ratios}")


if __name__ == "__main__":
    main()
