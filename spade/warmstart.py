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
    agent_seeds: int = 2,
    max_turns: int = 8,
) -> dict[str, Any]:
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
        params=SamplingParams(max_tokens=1536, temperature=0.8, seed=seed),
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
                params=SamplingParams(max_tokens=48, temperature=1.0, seed=seed),
                max_turns=max_turns,
            )
            return verdicts, result

    verdicts, agent = asyncio.run(run())
    failures: dict[str, int] = {}
    for v in verdicts:
        for f in v.failures[:1]:
            failures[f.check] = failures.get(f.check, 0) + 1
    low, high = agent.overall.interval
    return {
        "designer_attempts": len(attempts),
        "designer_extracted": len(programs),
        "designer_valid": sum(v.admitted for v in verdicts),
        "designer_valid_rate": sum(v.admitted for v in verdicts) / max(len(attempts), 1),
        "designer_first_failures": failures,
        "agent_episodes": agent.overall.episodes,
        "agent_win_rate_on_seeds": agent.overall.rate,
        "agent_win_rate_95ci": [round(low, 3), round(high, 3)],
        "seconds": round(time.monotonic() - started, 1),
    }
