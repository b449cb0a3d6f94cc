"""Designer reward windows: the pending Designer samples of a regeneration, scored when their
window closes (SPADE.md section 3).

A design made at iteration i is rewarded at the end of iteration i + regen_interval - 1: by then
its environment has been played for `regen_interval` iterations (the window), so Designer samples
are trained `regen_interval - 1` updates after they were sampled (off-policy by that much; the
PPO ratio corrects for it). The reward function sees the paired arms of the design iteration
(hinted vs plain, same seeds) and every plain play of the window; the hint gate needs the
environment's solution at seed 0, fetched when the design is admitted (`solutions`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spade.backends.base import Sample, episode_sample
from spade.envs.pool import Pool
from spade.rewards import (
    INVALID_DESIGN_REWARD,
    DesignStats,
    designer_advantages,
    designer_scale,
    hint_gate,
    win_rate_of,
)
from spade.sandbox import SandboxAPI, SandboxError
from spade.selfplay.admission import Outcome
from spade.types import Program

DesignerReward = Callable[[DesignStats], float]

UNPLAYED = "no plain play at the design iteration"
"""The hint reason of an admitted design nobody played when it was designed (no regret term)."""


def pending_item(outcome: Outcome, solution: Sequence[str]) -> dict[str, Any]:
    """A Designer sample waiting for its window (JSON, kept in state.json across a resume)."""
    a = outcome.attempt
    sample = episode_sample([a.completion], 0.0, "designer")
    return {
        "iteration": a.iteration,
        "regen": a.regen,
        "skill": a.skill,
        "env_id": outcome.env_id,
        "hint": a.program.hint if a.program else "",
        "solution": list(solution),
        "token_ids": list(sample.token_ids),
        "loss_mask": list(sample.loss_mask),
        "logprobs": list(sample.logprobs),
        "temperature": sample.temperature,
    }


async def solutions(
    sandbox: SandboxAPI, programs: Sequence[Program]
) -> tuple[dict[str, list[str]], int]:
    """solution() replies at seed 0 for the hint gate (a hint must not contain them), and how
    many programs failed to give one. Only an environment's own failure (SandboxError) is
    tolerated: anything else is a bug and propagates instead of turning the gate off."""
    out: dict[str, list[str]] = {}
    errors = 0
    for program in programs:
        value: Any = None
        try:
            session = await sandbox.open(program.code)
        except SandboxError:
            errors += 1
            continue
        try:
            await session.reset(0)
            value = await session.solution()
        except SandboxError:
            errors += 1
        finally:
            await session.close()
        value = [value] if isinstance(value, str) else value
        if isinstance(value, list):
            out[program.env_id] = [str(v) for v in value][:100]
    return out, errors


def close_windows(
    it: int,
    regen_interval: int,
    pool: Pool,
    pending: list[dict[str, Any]],
    reward_fn: DesignerReward,
    n_agent: int,
    scale_floor: float = 1.0,
    scale_cap: float = 50.0,
) -> tuple[list[dict[str, Any]], list[Sample], dict[str, Any]]:
    """Reward the pending items whose window ends at `it`: (still pending, Designer samples with
    a non-zero advantage, metrics). `scale_floor`, `scale_cap`: see `designer_scale`."""
    closing = [p for p in pending if p["iteration"] + regen_interval - 1 <= it]
    still = [p for p in pending if p not in closing]
    if not closing:
        return still, [], {}
    rewards: list[float] = []
    regrets: list[float] = []
    for item in closing:
        reward, regret = _score(item, it, pool, reward_fn)
        rewards.append(reward)
        if regret is not None:
            regrets.append(regret)
    scale = designer_scale(
        n_agent, len(closing), regen_interval, cap=scale_cap, floor=min(scale_floor, scale_cap)
    )
    advantages = designer_advantages(rewards, [(p["skill"], p["regen"]) for p in closing], scale)
    samples = [
        Sample(
            tuple(p["token_ids"]),
            tuple(p["loss_mask"]),
            tuple(p["logprobs"]),
            adv,
            "designer",
            p["temperature"],
        )
        for p, adv in zip(closing, advantages)
        if adv != 0.0
    ]
    metrics = {
        "designer_reward": sum(rewards) / len(rewards),
        "regret": sum(regrets) / len(regrets) if regrets else None,
        "designer_scale": scale,
    }
    return still, samples, metrics


def _score(
    item: dict[str, Any], it: int, pool: Pool, reward_fn: DesignerReward
) -> tuple[float, float | None]:
    """(reward, regret or None) of one pending item; records the reward of an admitted one."""
    if item["env_id"] is None:
        return INVALID_DESIGN_REWARD, None  # recorded with its attempt already
    hinted, plain = pool.paired_returns(item["env_id"], item["iteration"])
    window = pool.returns(item["env_id"], since_iteration=item["iteration"], until_iteration=it)
    reason = hint_gate(item["hint"], item["solution"], win_rate_of(plain)) if plain else UNPLAYED
    stats = DesignStats(
        item["env_id"],
        item["skill"],
        item["regen"],
        item["hint"],
        tuple(hinted),
        tuple(plain),
        tuple(window),
        reason is None,
    )
    reward = reward_fn(stats)
    regret = stats.regret if hinted else None  # paired_returns gives equal arms, seed by seed
    pool.record_designer_reward(
        item["env_id"],
        item["regen"],
        it,
        reward,
        win_rate=stats.win_rate,
        regret=regret,
        plain_mean=sum(plain) / len(plain) if plain else None,
        hinted_mean=sum(hinted) / len(hinted) if hinted else None,
        hint_ok=reason is None,
        hint_reason=reason,
    )
    return reward, regret
