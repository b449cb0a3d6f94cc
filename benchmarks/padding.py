"""Sampling a batch of uneven prompts: split by length (the sampler's default) vs one padded batch.

    python benchmarks/padding.py                  # the embedded model, 15 short + 1 long prompt
    python benchmarks/padding.py --long-words 800 --rows 30   # slower: minutes for the padded batch

The local sampler left-pads a batch to its longest prompt. A suite evaluation mixes prompt
lengths (reasoning-gym's number_sorting at level 1 asks 1,000-4,000-character questions beside
20-character ones), so one long prompt made every row's prefill as long as it. The sampler now
splits such a batch (`spade.backends.sampling.length_groups`: no group pads past 2x its real
tokens); each row keeps its own seed, so the replies are the same (checked here, and by
tests/backends/test_sampler.py). Both settings run in this process on the same model; the
table shows the wall time of one `sample()` call each (best of `--repeats`) and the ratio
against the padded baseline. Never a test.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--rows", type=int, default=16, help="prompts in the batch (one is long)")
    ap.add_argument("--short-words", type=int, default=12)
    ap.add_argument("--long-words", type=int, default=300)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--precision", default="auto", help="auto (bf16 where the CPU has it), fp32")
    args = ap.parse_args()

    from benchmarks.backends import cpu_name
    from spade.backends import Prompt, SamplingParams, sampling
    from spade.backends.local import LocalBackend, LocalConfig
    from spade.backends.torch_setup import model_path

    backend = LocalBackend(
        LocalConfig(
            model=model_path(args.model),
            seed=0,
            threads=args.threads,
            prefix_cache_mb=0,
            precision=args.precision,
        )
    )
    rng = random.Random(0)
    numbers = [str(rng.randint(-999, 999)) for _ in range(args.long_words)]
    rows = [f"Sort these numbers: {', '.join(numbers)}."]
    rows += [
        " ".join(rng.choices(["add", "seven", "to", "twelve", "what", "is"], k=args.short_words))
        for _ in range(args.rows - 1)
    ]
    prompts = [Prompt.of([{"role": "user", "content": r}]) for r in rows]
    params = SamplingParams(max_tokens=args.max_tokens, temperature=1.0, seed=0)
    real = sampling.length_groups
    settings = {
        "one padded batch": lambda n, s: [list(range(len(n)))],
        "split by length": real,
    }
    times: dict[str, float] = {}
    replies: dict[str, list] = {}
    for name, grouping in settings.items():
        sampling.length_groups = grouping  # type: ignore[assignment]
        best = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            out = backend.sample(prompts, params)
            best = min(best, time.perf_counter() - start)
        times[name], replies[name] = best, [c.completion_ids for c in out]
    sampling.length_groups = real
    ids = [backend.tokenizer(r)["input_ids"] for r in rows[:2]]
    base = times["one padded batch"]
    print(f"CPU: {cpu_name()}; model {args.model} ({backend.precision}), {args.rows} rows")
    print(f"prompt tokens: long {len(ids[0])}, short ~{len(ids[1])}; {args.max_tokens} new tokens")
    print("| setting | seconds per sample() | ratio |")
    print("|---|---|---|")
    for name, seconds in times.items():
        print(f"| {name} | {seconds:.2f} | {base / seconds:.2f}x |")
    same = sum(a == b for a, b in zip(replies["one padded batch"], replies["split by length"]))
    print(f"rows whose reply is the same in both settings: {same} of {args.rows}")


if __name__ == "__main__":
    main()
