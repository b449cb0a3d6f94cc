"""The Agent's training samples from one iteration's plays: GRPO advantages within each
environment's plain plays (or each seed's), and the cap on the Agent tokens trained per iteration
that gives every arm of the replication the same Agent compute (`PlayConfig.agent_token_cap`)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from spade.backends.base import Sample, episode_sample
from spade.rewards import group_advantages
from spade.selfplay.rollout import Rollout


def agent_samples_of(
    rollouts: Sequence[Rollout],
    negative_weight: float = 1.0,
    by_seed: bool = False,
    token_cap: int | None = None,
    rng: random.Random | None = None,
) -> list[Sample]:
    """The Agent's samples: GRPO advantages within each environment's plain plays (or each
    seed's, `by_seed`), negative ones scaled by `negative_weight`, zero ones dropped. With
    `token_cap`, whole groups are left out, in `rng`'s order, until the trained tokens fit
    (`PlayConfig.agent_token_cap`); the kept samples stay in rollout order."""
    groups: dict[tuple[str, int | None], list[Rollout]] = {}
    for r in rollouts:
        if not r.request.hinted and not r.error and r.completions:
            key = (r.request.program.env_id, r.request.seed if by_seed else None)
            groups.setdefault(key, []).append(r)
    grouped: list[list[Sample]] = []
    for group in groups.values():
        advantages = group_advantages([r.return_ for r in group])
        samples = []
        for r, advantage in zip(group, advantages):
            if advantage < 0.0:
                advantage *= negative_weight
            if advantage != 0.0 and all(c.trainable for c in r.completions):
                samples.append(episode_sample(r.completions, advantage, "agent"))
        if samples:
            grouped.append(samples)
    if token_cap is not None:
        grouped = _within_token_cap(grouped, token_cap, rng or random.Random(0))
    return [s for samples in grouped for s in samples]


def _within_token_cap(
    grouped: list[list[Sample]], cap: int, rng: random.Random
) -> list[list[Sample]]:
    """The groups kept under `cap` trained tokens: taken in a seeded random order, each one
    that still fits is kept (in its original place); a group bigger than the cap on its own is
    never kept."""
    order = list(range(len(grouped)))
    rng.shuffle(order)
    kept: set[int] = set()
    used = 0
    for i in order:
        tokens = sum(s.num_trained_tokens for s in grouped[i])
        if used + tokens <= cap:
            kept.add(i)
            used += tokens
    return [g for i, g in enumerate(grouped) if i in kept]
