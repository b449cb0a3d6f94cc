"""Throughput of the local backend against Hugging Face `generate`, multi-turn KV reuse, training.

    python benchmarks/backends.py                          # the default model (SmolLM2-135M)
    python benchmarks/backends.py --models tiny-test --batches 1 8 --prompt-lengths 50
    python benchmarks/backends.py --skip-generation --skip-train   # only the 6-turn rollouts

Three tables, all measured in this one process on the same model object and precision:

1. generation: our sampler (`LocalBackend.sample`) vs `model.generate` with the same batch,
   prompt length, new tokens (every reply runs to `--max-tokens`: end-of-turn is disabled on our
   side, `min_new_tokens` on HF's), sampling settings (T=1, no top-p / top-k), weights and
   autocast. `HF` is the model as `from_pretrained` loads it (stock SDPA attention); `HF+attn`
   is `generate` on our backend's model object, whose attention runs in fp32 under bf16
   autocast (spade.backends._hf.use_fp32_attention), to show what the sampler loop itself adds.
   Ratio > 1 means ours is faster.
2. 6-turn episodes: `--conversations` conversations, each turn a reply of `--turn-tokens` tokens
   and an observation of about `--observation-words` words, extended token-in/token-out, with
   the prefix cache off (every turn re-prefills the whole conversation, as before) and on.
3. training: one PPO update over `--train-seqs` x `--train-len` tokens.

Times are the best of `--repeats` runs after a warm-up. Prompts are fixed pseudo-random token
ids (no special tokens), so nothing depends on what the model would say. Never used as a test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spade.backends.base import PPOConfig, Prompt, Sample, SamplingParams


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "unknown CPU"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def fake_prompts(batch: int, length: int, vocab: int) -> list[list[int]]:
    # Ids from the middle of the vocabulary: ordinary text pieces, never special tokens.
    return [
        [200 + (7919 * i + 104_729 * j) % (vocab - 400) for j in range(length)]
        for i in range(batch)
    ]


def generation_rows(
    backend, stock, batches, lengths, max_tokens, repeats, skip_hf, warm_only=False
):
    import torch

    vocab = len(backend.tokenizer)
    params = SamplingParams(max_tokens=max_tokens, temperature=1.0, seed=0)
    eot = backend.eot_ids
    rows = []
    for length in lengths:
        for b in batches:
            ids = fake_prompts(b, length, vocab)
            prompts = [Prompt(messages=(), token_ids=tuple(p)) for p in ids]

            def ours(prompts=prompts):
                backend.eot_ids = {-1}  # never stop early: exactly max_tokens per reply
                try:
                    backend.sample(prompts, params)
                finally:
                    backend.eot_ids = eot
                    if backend.prefix_cache is not None:
                        backend.prefix_cache.clear()

            def hf(ids=ids, model=stock):
                x = torch.tensor(ids)
                with torch.no_grad(), backend._autocast() or _null():
                    model.generate(
                        input_ids=x,
                        attention_mask=torch.ones_like(x),
                        max_new_tokens=max_tokens,
                        min_new_tokens=max_tokens,
                        do_sample=True,
                        temperature=1.0,
                        top_p=1.0,
                        top_k=0,
                        pad_token_id=backend.pad_id,
                    )

            t_ours = best_time(ours, repeats)
            nan = float("nan")
            t_hf = nan if skip_hf else best_time(hf, repeats)
            t_tuned = nan if skip_hf else best_time(lambda ids=ids: hf(ids, backend.model), repeats)
            n = b * max_tokens
            rows.append((b, length, n / t_ours, n / t_hf, n / t_tuned))
            if warm_only:
                continue
            print(
                f"  batch {b:>3} prompt {length:>5}: ours {n / t_ours:7.1f} tok/s, "
                f"HF {n / t_hf:7.1f}, HF+attn {n / t_tuned:7.1f}",
                flush=True,
            )
    return rows


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


WORDS = "north east south west wall key door lever box goal".split()


def play_turns(policy, conversations, turns, turn_tokens, observation_words):
    """(generated tokens, seconds, longest final context) over `turns` turns of `conversations`
    conversations: a 150-word first message, replies up to `turn_tokens` tokens at T=1, then
    observations of `observation_words` words, extended token-in/token-out. Also driven by
    `vllm_rollouts.py` for vLLM."""
    prompts = [
        Prompt.of(
            [
                {
                    "role": "user",
                    "content": " ".join(WORDS[(i + j) % 10] for j in range(150))
                    + " Answer with \\boxed{move}.",
                }
            ]
        )
        for i in range(conversations)
    ]
    generated, start = 0, time.perf_counter()
    for t in range(turns):
        params = SamplingParams(max_tokens=turn_tokens, temperature=1.0, seed=t)
        completions = policy.sample(prompts, params)
        generated += sum(len(c.completion_ids or ()) for c in completions)
        observation = [
            " ".join(WORDS[(i * 3 + t + j) % 10] for j in range(observation_words))
            for i in range(conversations)
        ]
        prompts = [
            policy.extend(p, c, [{"role": "user", "content": obs}])
            for p, c, obs in zip(prompts, completions, observation)
        ]
    context = max(len(p.token_ids or ()) for p in prompts)
    return generated, time.perf_counter() - start, context


def rollout_rate(backend, conversations, turns, turn_tokens, observation_words, cached: bool):
    """Generated tokens per second over `turns` turns of `conversations` conversations."""
    saved = backend.prefix_cache
    if not cached:
        backend.prefix_cache = None
    elif saved is not None:
        saved.clear()
    eot = backend.eot_ids
    backend.eot_ids = {-1}
    try:
        generated, elapsed, context = play_turns(
            backend, conversations, turns, turn_tokens, observation_words
        )
    finally:
        backend.prefix_cache = saved
        backend.eot_ids = eot
    return generated / elapsed, context


def train_rate(backend, train_len, train_seqs, repeats):
    vocab = len(backend.tokenizer)
    q = train_len // 4
    samples = [
        Sample(
            token_ids=tuple(200 + (7 * i + 13 * j) % (vocab - 400) for j in range(train_len)),
            loss_mask=(0,) * q + (1,) * (train_len - q),
            logprobs=(0.0,) * q + (-7.0,) * (train_len - q),
            advantage=1.0 if i % 2 else -1.0,
            role="agent",
        )
        for i in range(train_seqs)
    ]
    backend.update(samples[:1])  # warm-up
    return train_seqs * train_len / best_time(lambda: backend.update(samples), repeats)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--models", nargs="+", default=["smollm2"])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 8, 32])
    p.add_argument("--prompt-lengths", nargs="+", type=int, default=[200, 1000])
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--conversations", type=int, default=16)
    p.add_argument("--turns", type=int, default=6)
    p.add_argument("--turn-tokens", type=int, default=48)
    p.add_argument("--observation-words", type=int, default=40)
    p.add_argument("--train-len", type=int, default=256, help="tokens per training sequence")
    p.add_argument("--train-seqs", type=int, default=8)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--precision", default="auto")
    p.add_argument("--skip-hf", action="store_true")
    p.add_argument("--skip-rollouts", action="store_true")
    p.add_argument("--skip-train", action="store_true")
    p.add_argument("--skip-generation", action="store_true")
    args = p.parse_args()

    import torch

    from spade.backends.local import LocalBackend, LocalConfig

    if args.threads:
        torch.set_num_threads(args.threads)
    for name in args.models:
        backend = LocalBackend(
            LocalConfig(
                model=name,
                precision=args.precision,
                ppo=PPOConfig(learning_rate=1e-6, micro_batch_tokens=4096),
            )
        )
        print(
            f"\n{name}: {backend.num_parameters / 1e6:.1f}M parameters, {backend.precision}, "
            f"{cpu_name()}, {torch.get_num_threads()} threads, torch {torch.__version__}"
        )
        # warm-up: one short reply per code path
        short = fake_prompts(2, 16, len(backend.tokenizer))
        backend.sample(
            [Prompt(messages=(), token_ids=tuple(x)) for x in short],
            SamplingParams(max_tokens=4, seed=0),
        )
        if not args.skip_generation:
            print(f"\ngeneration ({args.max_tokens} new tokens per reply):")
            stock = None
            if not args.skip_hf:
                from transformers import AutoModelForCausalLM

                stock = AutoModelForCausalLM.from_pretrained(backend.model_path).eval()
            rows = generation_rows(
                backend,
                stock,
                args.batches,
                args.prompt_lengths,
                args.max_tokens,
                args.repeats,
                args.skip_hf,
            )
            header = (
                f"{'batch':>6}{'prompt':>8}{'ours tok/s':>12}{'HF tok/s':>10}{'HF+attn':>9}"
                f"{'ours/HF':>9}{'ours/HF+attn':>14}"
            )
            print("\n" + header + "\n" + "-" * len(header))
            for b, length, ours, hf, tuned in rows:
                print(
                    f"{b:>6}{length:>8}{ours:>12.1f}{hf:>10.1f}{tuned:>9.1f}"
                    f"{ours / hf:>9.2f}{ours / tuned:>14.2f}"
                )

        if not args.skip_rollouts:
            before, ctx = rollout_rate(
                backend,
                args.conversations,
                args.turns,
                args.turn_tokens,
                args.observation_words,
                cached=False,
            )
            after, _ = rollout_rate(
                backend,
                args.conversations,
                args.turns,
                args.turn_tokens,
                args.observation_words,
                cached=True,
            )
            print(
                f"\n{args.turns}-turn episodes: {args.conversations} conversations, "
                f"{args.turn_tokens}-token replies, up to {ctx} tokens of context"
            )
            header = f"{'KV across turns':<32}{'tok/s':>8}{'ratio':>8}"
            print(header + "\n" + "-" * len(header))
            print(f"{'off (re-prefill every turn)':<32}{before:>8.1f}{1.0:>8.2f}")
            print(f"{'on (prefix cache)':<32}{after:>8.1f}{after / before:>8.2f}")

        if not args.skip_train:
            rate = train_rate(backend, args.train_len, args.train_seqs, args.repeats)
            print(
                f"\ntraining: {rate:.0f} tok/s (one PPO update, "
                f"{args.train_seqs} x {args.train_len} tokens)"
            )


if __name__ == "__main__":
    main()
