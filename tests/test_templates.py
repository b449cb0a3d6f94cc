"""Parametric environment families (spade.templates): every render is a valid environment.

Two renders of every family go through the real validator in the sandbox (static rules, probes,
solution at every difficulty, determinism in fresh interpreters, duplicates against the seeds and
each other). The distinctness of many renders is measured and printed (`pytest -s`).
"""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from spade import bundled
from spade.sandbox import Sandbox
from spade.templates import FAMILIES, SKILL_FAMILIES, render, render_many
from spade.types import GAME_SKILLS, Program
from spade.validate import ValidatorConfig, shingles, validate_many


def test_every_game_skill_has_at_least_two_families():
    assert set(SKILL_FAMILIES) == set(GAME_SKILLS)
    for skill, names in SKILL_FAMILIES.items():
        assert len(names) >= 2, skill
        for name in names:
            assert FAMILIES[name](random.Random(0)).skill == skill


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_renders_are_deterministic_given_the_rng_and_vary_with_it(family):
    first = [FAMILIES[family](random.Random(seed)) for seed in range(6)]
    again = [FAMILIES[family](random.Random(seed)) for seed in range(6)]
    assert first == again
    assert len({r.code for r in first}) == 6
    for r in first:
        program = Program.from_code(r.code)
        assert program.skill == r.skill and program.difficulty_levels() == (1, 2, 3)
        assert program.metadata.get("hint") == r.hint and r.family == family
        assert 30 <= r.code.count("\n") <= 130


def test_two_renders_of_every_family_pass_the_real_validator():
    rng = random.Random(2024)
    rendered = [render(rng, name) for name in sorted(FAMILIES) for _ in range(2)]
    programs = [
        Program.from_code(r.code, source=f"template:{r.family}", hint=r.hint) for r in rendered
    ]

    async def run():
        async with Sandbox() as sandbox:
            return await validate_many(
                programs, sandbox, ValidatorConfig(), pool=bundled.seed_programs()
            )

    verdicts = asyncio.run(run())
    failed = [
        f"{r.family}: {[(f.check, f.reason) for f in v.failures]}"
        for r, v in zip(rendered, verdicts)
        if not v.admitted
    ]
    assert not failed, "\n".join(failed)


def test_many_renders_are_distinct_and_rarely_near_duplicates():
    programs = render_many(360, seed=1)
    assert len({p.code for p in programs}) == 360
    assert {p.family for p in programs} == set(FAMILIES)
    grams = [shingles(p.code) for p in programs]
    same_family = [
        len(grams[i] & grams[j]) / len(grams[i] | grams[j])
        for i, j in itertools.combinations(range(len(programs)), 2)
        if programs[i].family == programs[j].family
    ]
    near = sum(j >= ValidatorConfig().near_duplicate_threshold for j in same_family)
    fraction = near / len(same_family)
    print(
        f"\n{len(same_family)} same-family pairs: {fraction:.2%} near-duplicates "
        f"(Jaccard >= {ValidatorConfig().near_duplicate_threshold}), mean Jaccard "
        f"{sum(same_family) / len(same_family):.2f}, max {max(same_family):.2f}"
    )
    assert fraction < 0.01
