"""Overfit one batch: play, update K times on that batch, replay the same seeds (LEARNING-NOTES.md).

    python benchmarks/update_probe.py                                  # smollm2, lr 3e-5 1e-4 3e-4
    python benchmarks/update_probe.py --model PATH --lrs 1e-4 3e-4 --minibatches 4 --steps 2
    python benchmarks/update_probe.py --model tiny-test --reward parity --envs 4 --plays 4

One batch of Agent episodes on one-question environments (`spade.templates.mini` renders of the
families the warm start trains on, difficulty 1, the real sandbox), GRPO samples built from it as
the loop builds them (`group_advantages` per environment; groups that tie are dropped), then for
each learning rate a fresh copy of the model makes `--steps` updates on those samples (each
`--minibatches` optimizer steps; PPO clips as the policy leaves the behaviour logprobs) and plays
the same requests with the same sampling seeds again. If the win rate and the rewarded replies'
logprobs do not rise, the update path is broken and no recipe will help.

The table, one row per learning rate, every "after" against the "before" of this process:
wins before -> after on the replayed episodes (paired: before the update the replay is the batch
itself), the mean per-token logprob (`score`) of the rewarded replies (advantage > 0) and of the
punished ones (< 0), and the last update's approx KL (to the behaviour policy), clip fraction
and gradient norm.

`--reward parity` rewards a reply whose first token id is even instead of the environment's
return: a task no model knows, so it checks the update path itself on a model that never wins
(`tiny-test`, random weights). Never a test: it runs minutes on the default model.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spade.backends.base import PPOConfig, Sample, SamplingParams, episode_sample
from spade.backends.local import LocalBackend, LocalConfig
from spade.rewards import group_advantages
from spade.sandbox import Sandbox
from spade.selfplay.rollout import PlayRequest, Rollout, play
from spade.templates.mini import MINI_EVAL_FAMILIES, MINI_FAMILIES, render_mini
from spade.types import Program


def environments(count: int, seed: int, kind: str = "questions") -> list[Program]:
    """`count` environments: the question environments of the trained question families in
    turn (`questions`, what the default run's pool is seeded with; each seed draws another
    question), or distinct mini programs of the trained mini families (`mini`)."""
    if kind == "questions":
        from spade.templates import questions

        names = sorted(questions.TRAIN_FAMILIES)
        return [
            Program.from_code(
                questions.question_env(names[i % len(names)]),
                skill=questions.SKILL,
                source=f"question:{names[i % len(names)]}",
            )
            for i in range(count)
        ]
    families = [f for f in sorted(MINI_FAMILIES) if f not in MINI_EVAL_FAMILIES]
    rng = random.Random(seed)
    out: list[Program] = []
    seen: set[str] = set()
    while len(out) < count:
        r = render_mini(rng, families[len(out) % len(families)])
        if r.code not in seen:
            seen.add(r.code)
            out.append(Program.from_code(r.code, hint=r.hint, skill=r.skill, source=r.family))
    return out


def rewards(rollouts: Sequence[Rollout], kind: str) -> list[float]:
    if kind == "env":
        return [r.return_ for r in rollouts]
    first = [(r.completions[0].completion_ids or (1,))[0] if r.completions else 1 for r in rollouts]
    return [float(not r.error and t % 2 == 0) for r, t in zip(rollouts, first)]


def grpo_samples(rollouts: Sequence[Rollout], returns: Sequence[float]) -> list[Sample]:
    """Agent samples as the loop builds them: advantages per environment, ties dropped."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rollouts):
        if not r.error and r.completions:
            groups.setdefault(r.request.program.env_id, []).append(i)
    samples = []
    for members in groups.values():
        for i, advantage in zip(members, group_advantages([returns[i] for i in members])):
            if advantage != 0.0 and all(c.trainable for c in rollouts[i].completions):
                samples.append(episode_sample(rollouts[i].completions, advantage, "agent"))
    return samples


def mean_logprob(backend: LocalBackend, samples: Sequence[Sample]) -> float:
    """Mean per-token logprob of the samples' trained tokens at the backend's weights."""
    if not samples:
        return float("nan")
    scores = backend.score(samples)
    values = [lp for s, row in zip(samples, scores) for lp, m in zip(row, s.loss_mask) if m]
    return sum(values) / len(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2", help="smollm2, tiny-test or a model folder")
    parser.add_argument("--lrs", type=float, nargs="+", default=[3e-5, 1e-4, 3e-4])
    parser.add_argument("--envs", type=int, default=16, help="environments in the batch")
    parser.add_argument("--env-kind", choices=["questions", "mini"], default="questions")
    parser.add_argument("--plays", type=int, default=8, help="plays per environment (a group)")
    parser.add_argument("--minibatches", type=int, default=4, help="optimizer steps per update")
    parser.add_argument("--steps", type=int, default=2, help="updates on the same batch")
    parser.add_argument("--seed", type=int, default=0, help="renders, episodes and sampling")
    parser.add_argument("--reward", choices=["env", "parity"], default="env")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=48, help="per Agent reply")
    parser.add_argument("--max-turns", type=int, default=1)
    parser.add_argument("--trainable-layers", type=int, default=10)
    parser.add_argument("--role-normalisation", choices=["joint", "per_role"], default="per_role")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default torch's)")
    args = parser.parse_args()

    programs = environments(args.envs, args.seed, args.env_kind)
    requests = [
        PlayRequest(p, 1000 * args.seed + i, kwargs={"difficulty": 1})
        for p in programs
        for i in range(args.plays)
    ]
    params = SamplingParams(
        max_tokens=args.max_tokens, temperature=args.temperature, seed=10_000 + args.seed
    )

    def backend(lr: float) -> LocalBackend:
        ppo = PPOConfig(
            learning_rate=lr,
            weight_decay=0.0,
            num_minibatches=args.minibatches,
            micro_batch_tokens=1024,
            role_normalisation=args.role_normalisation,
        )
        config = LocalConfig(
            model=args.model,
            seed=args.seed,
            ppo=ppo,
            threads=args.threads,
            trainable_layers=args.trainable_layers,
        )
        return LocalBackend(config)

    async def run() -> None:
        async with Sandbox() as sandbox:

            async def replay(policy: LocalBackend) -> tuple[list[float], list[Rollout]]:
                done = await play(
                    policy, sandbox, requests, params=params, max_turns=args.max_turns
                )
                return rewards(done, args.reward), done

            started = time.monotonic()
            model = backend(args.lrs[0])
            returns, rollouts = await replay(model)
            samples = grpo_samples(rollouts, returns)
            rewarded = [s for s in samples if s.advantage > 0]
            punished = [s for s in samples if s.advantage < 0]
            before = (mean_logprob(model, rewarded), mean_logprob(model, punished))
            wins = sum(r > 0 for r in returns)
            print(
                f"model {args.model} ({model.precision}), {args.envs} envs x {args.plays} plays, "
                f"reward {args.reward}: {wins}/{len(returns)} won, {len(samples)} samples "
                f"({len(rewarded)} rewarded, {len(punished)} punished, "
                f"{sum(s.num_trained_tokens for s in samples)} trained tokens); "
                f"{args.steps} updates x {args.minibatches} minibatches; "
                f"played in {time.monotonic() - started:.0f} s",
                flush=True,
            )
            if not samples:
                print("no group mixed a win and a loss: nothing to train (more plays or envs)")
                return
            print(
                "| lr | wins before -> after | rewarded logprob before -> after | "
                "punished logprob before -> after | approx_kl | clip_frac | grad_norm | s |\n"
                "|---|---|---|---|---|---|---|---|",
                flush=True,
            )
            for lr in args.lrs:
                del model
                gc.collect()
                t = time.monotonic()
                model = backend(lr)
                for _ in range(args.steps):
                    metrics = model.update(samples)
                after = (mean_logprob(model, rewarded), mean_logprob(model, punished))
                replayed, _ = await replay(model)
                won = sum(r > 0 for r in replayed)
                ratio = f"x{won / wins:.2f}" if wins else "n/a"
                print(
                    f"| {lr:g} | {wins} -> {won} ({won - wins:+d}, {ratio}) | "
                    f"{before[0]:.3f} -> {after[0]:.3f} ({after[0] - before[0]:+.3f}) | "
                    f"{before[1]:.3f} -> {after[1]:.3f} ({after[1] - before[1]:+.3f}) | "
                    f"{metrics['approx_kl']:.4f} | {metrics['clip_frac']:.3f} | "
                    f"{metrics['grad_norm']:.3f} | {time.monotonic() - t:.0f} |",
                    flush=True,
                )

    asyncio.run(run())


if __name__ == "__main__":
    main()
