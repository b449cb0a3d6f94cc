"""Peak memory of the local backend through one self-play iteration's model work, by setting.

    python benchmarks/memory.py                       # the default model, 32 conversations
    python benchmarks/memory.py --rows 16 --turns 2   # quicker

Each setting runs in its own process (so peaks do not mix): load the model, play `--rows`
conversations for `--turns` turns (replies of 32 tokens, observations of `--observation-words`
words, prompts of `--prompt-words` words: the tiny recipe's Agent batch is 8 environments x 4
plays = 32), then two PPO updates on those conversations (the second one with the optimizer
state in place, as in every iteration after the first). A thread reads the resident set size
every 10 ms; the table shows the peak above the loaded model for sampling and for training,
with ratios against the first setting, and the wall time of each phase. Settings:

- `one pass`: every prompt token fed in one forward pass (`prefill_tokens` unbounded), every
  weight trained (what the default run did before its memory was cut);
- `chunked`: prompts fed 4,096 tokens (rows x columns) at a time, every weight trained;
- `chunked, top 10`: and only the top 10 decoder layers trained (the tiny recipe's setting).

Both settings project only the trained positions onto the vocabulary in the update and split
batches that mix cached and uncached conversations; those changes have no switch. Never a test.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SETTINGS = {
    "one pass": {"prefill_tokens": 10**9, "trainable_layers": None},
    "chunked": {"prefill_tokens": 4096, "trainable_layers": None},
    "chunked, top 10": {"prefill_tokens": 4096, "trainable_layers": 10},
}


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


class Peak:
    """The largest RSS seen since `reset`, read by a background thread."""

    def __init__(self) -> None:
        self.value = 0.0
        threading.Thread(target=self._poll, daemon=True).start()

    def _poll(self) -> None:
        while True:
            self.value = max(self.value, _rss_mib())
            time.sleep(0.01)

    def reset(self) -> float:
        self.value = now = _rss_mib()
        return now


def child(args: argparse.Namespace) -> None:
    import random

    from spade.backends import Prompt, SamplingParams, episode_sample
    from spade.backends.base import PPOConfig
    from spade.backends.local import LocalBackend, LocalConfig
    from spade.backends.torch_setup import model_path

    setting = SETTINGS[args.setting]
    peak = Peak()
    backend = LocalBackend(
        LocalConfig(
            model=model_path(args.model),
            seed=0,
            threads=1,
            ppo=PPOConfig(learning_rate=1e-5, weight_decay=0.0, micro_batch_tokens=1024),
            **setting,  # type: ignore[arg-type]
        )
    )
    rng = random.Random(0)
    words = ["north", "seven", "box", "red", "left", "sum", "guess", "wall", "key", "twelve"]
    opening = [
        [{"role": "user", "content": " ".join(rng.choices(words, k=args.prompt_words))}]
        for _ in range(args.rows)
    ]
    prompts = [Prompt.of(m) for m in opening]
    history: list[list] = [[] for _ in prompts]
    base = peak.reset()
    t0 = time.monotonic()
    for turn in range(args.turns):
        params = SamplingParams(max_tokens=32, temperature=1.0, seed=turn, stop=())
        for i, c in enumerate(backend.sample(prompts, params)):
            history[i].append(c)
            note = " ".join(rng.choices(words, k=args.observation_words))
            prompts[i] = backend.extend(prompts[i], c, [{"role": "user", "content": note}])
    sample_s, sample_peak = time.monotonic() - t0, peak.value
    samples = [episode_sample(conv, (-1.0) ** i, "agent") for i, conv in enumerate(history)]
    peak.reset()
    t0 = time.monotonic()
    backend.update(samples)
    backend.update(samples)
    train_s, train_peak = time.monotonic() - t0, peak.value
    tokens = sum(len(s.token_ids) for s in samples)
    print(
        json.dumps(
            {
                "setting": args.setting,
                "loaded_mib": base,
                "sample_peak_mib": sample_peak,
                "sample_s": sample_s,
                "train_peak_mib": train_peak,
                "train_s": train_s,
                "train_tokens": tokens,
                "precision": backend.precision,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--prompt-words", type=int, default=300)
    parser.add_argument("--observation-words", type=int, default=40)
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS))
    parser.add_argument("--setting", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setting:
        child(args)
        return
    from backends import cpu_name  # benchmarks/ is on sys.path when run as a script

    rows = []
    for name in args.settings:
        cmd = [sys.executable, __file__, "--setting", name]
        for flag in ("model", "rows", "turns", "prompt_words", "observation_words"):
            cmd += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(f"  {name}: done", file=sys.stderr, flush=True)
    first = rows[0]
    print(f"\n{cpu_name()}, {args.model} ({first['precision']}), {args.rows} conversations x ")
    print(f"{args.turns} turns, then 2 PPO updates on {first['train_tokens']:,} tokens")
    print(
        "| setting | loaded | sampling peak (+above loaded) | ratio | sampling s | "
        "training peak | ratio | training s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        s_up = r["sample_peak_mib"] - r["loaded_mib"]
        t_up = r["train_peak_mib"] - r["loaded_mib"]
        s_ratio = s_up / (first["sample_peak_mib"] - first["loaded_mib"])
        t_ratio = t_up / (first["train_peak_mib"] - first["loaded_mib"])
        print(
            f"| {r['setting']} | {r['loaded_mib']:,.0f} MiB | {r['sample_peak_mib']:,.0f} MiB "
            f"(+{s_up:,.0f}) | {s_ratio:.2f} | {r['sample_s']:.0f} | "
            f"{r['train_peak_mib']:,.0f} MiB (+{t_up:,.0f}) | {t_ratio:.2f} | {r['train_s']:.0f} |"
        )


if __name__ == "__main__":
    main()
