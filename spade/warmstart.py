"""Measure a (warm-started) model in both roles, as `spade bootstrap` reports it.

- Designer: one batched design call per skill, every reply through the real validator, with the
  bundled seeds as the duplicate pool (a memorised copy of a training program does not count);
- Agent: the game seeds played without hints; win rate with its 95% interval.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from spade import bundled
from spade.backends.base import SamplingParams
from spade.config import ModelConfig
from spade.designer import design
from spade.evaluate import evaluate
from spade.prompts import TINY_BUDGET_CHARS
from spade.sandbox import Sandbox
from spade.types import GAME_SKILLS
from spade.validate import ValidatorConfig, validate_many


def measure_model(
    path: str,
    *,
    seed: int = 0,
    designs_per_skill: int = 4,
    agent_seeds: int = 1,
    max_turns: int = 6,
    temperature: float = 0.8,
    top_p: float = 1.0,
    agent_temperature: float = 1.0,
    keep_replies: bool = False,
) -> dict[str, Any]:
    """Designer: `designs_per_skill` designs per game skill, sampled at `temperature` / `top_p`
    (the Designer prompt of the loop under the embedded model's budget, a random grounding
    document each), validated for real with the seeds as duplicate pool. Agent: the game seeds
    at `agent_seeds` seeds each, up to `max_turns` turns, without hints. `keep_replies` adds the
    Designer replies and verdicts to the report (for inspection)."""
    from spade.train import local_backend

    started = time.monotonic()
    policy = local_backend(ModelConfig(model=path), path, seed)
    skills = [s for s in GAME_SKILLS for _ in range(designs_per_skill)]
    attempts = design(
        policy,
        iteration=0,
        regen=0,
        skills_per_env=skills,
        rng=random.Random(seed),
        documents=bundled.grounding_documents(),
        params=SamplingParams(max_tokens=1536, temperature=temperature, top_p=top_p, seed=seed),
        budget_chars=TINY_BUDGET_CHARS,
    )
    programs = [a.program for a in attempts if a.program is not None]
    seeds = bundled.seed_programs()
    games = [p for p in seeds if p.skill in GAME_SKILLS]

    async def run() -> tuple[list[Any], Any]:
        async with Sandbox() as sandbox:
            verdicts = await validate_many(programs, sandbox, ValidatorConfig(), pool=seeds)
            result = await evaluate(
                policy,
                sandbox,
                games,
                seeds=range(agent_seeds),
                params=SamplingParams(max_tokens=48, temperature=agent_temperature, seed=seed),
                max_turns=max_turns,
            )
            return verdicts, result

    verdicts, agent = asyncio.run(run())
    failures: dict[str, int] = {}
    for v in verdicts:
        for f in v.failures[:1]:
            failures[f.check] = failures.get(f.check, 0) + 1
    low, high = agent.overall.interval
    report = {
        "designer_attempts": len(attempts),
        "designer_extracted": len(programs),
        "designer_valid": sum(v.admitted for v in verdicts),
        "designer_valid_rate": sum(v.admitted for v in verdicts) / max(len(attempts), 1),
        "designer_first_failures": failures,
        "agent_episodes": agent.overall.episodes,
        "agent_win_rate_on_seeds": agent.overall.rate,
        "agent_win_rate_95ci": [round(low, 3), round(high, 3)],
        "agent_wins_by_skill": {k: v.wins for k, v in sorted(agent.by_skill.items())},
        "seconds": round(time.monotonic() - started, 1),
    }
    if keep_replies:
        by_id = {p.env_id: v for p, v in zip(programs, verdicts)}
        report["replies"] = [
            {
                "skill": a.skill,
                "text": a.completion.text,
                "error": a.error,
                "failures": None
                if a.program is None
                else [[f.check, f.reason] for f in by_id[a.program.env_id].failures],
            }
            for a in attempts
        ]
    return report
