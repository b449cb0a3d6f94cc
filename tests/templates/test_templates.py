"""Parametric environment families (spade.templates): every render is a valid environment.

Two renders of every family go through the real validator in the sandbox (static rules, probes,
solution at every difficulty, determinism in fresh interpreters, duplicates against the seeds and
each other), in both forms: the full file and the compact scaffold subclass. The distinctness of
many renders is measured and printed (`pytest -s`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import random
import re

import pytest

from spade.envs import bundled
from spade.envs.checks import ValidatorConfig
from spade.envs.duplicates import shingles
from spade.envs.validate import validate_many
from spade.sandbox import Sandbox, runtime
from spade.templates import (
    COMPACT_FAMILIES,
    FAMILIES,
    SKILL_FAMILIES,
    Rendered,
    render,
    render_many,
)
from spade.types import GAME_SKILLS, Program


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


@pytest.mark.slow
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


# --- compact form -----------------------------------------------------------------------------

COMPACT_BASES = {
    "number_hunt": "GameEnv",
    "arithmetic": "QuestionEnv",
    "modular_equation": "QuestionEnv",
    "code_breaker": "GameEnv",
    "order_puzzle": "QuestionEnv",
    "clue_number": "QuestionEnv",
    "grid_walk": "GameEnv",
    "point_transform": "QuestionEnv",
    "path_trace": "QuestionEnv",
    "next_term": "QuestionEnv",
    "string_rule": "QuestionEnv",
    "grid_rule": "QuestionEnv",
    "knapsack": "QuestionEnv",
    "cheapest_route": "QuestionEnv",
    "assignment": "QuestionEnv",
    "switch_cause": "GameEnv",
    "response_law": "GameEnv",
    "broken_chain": "GameEnv",
}
"""The scaffold each compact family writes on: GameEnv for the genuinely multi-turn ones."""


def near_duplicate_fraction(programs: list[Rendered]) -> tuple[float, list[float]]:
    """Fraction of same-family pairs at or above the validator's near-duplicate threshold."""
    grams = [shingles(p.code) for p in programs]
    same_family = [
        len(grams[i] & grams[j]) / len(grams[i] | grams[j])
        for i, j in itertools.combinations(range(len(programs)), 2)
        if programs[i].family == programs[j].family
    ]
    near = sum(j >= ValidatorConfig().near_duplicate_threshold for j in same_family)
    return near / len(same_family), same_family


def test_every_family_has_a_compact_form_of_the_same_skill():
    assert set(COMPACT_FAMILIES) == set(FAMILIES) == set(COMPACT_BASES)
    for name in FAMILIES:
        full, compact = FAMILIES[name](random.Random(0)), COMPACT_FAMILIES[name](random.Random(0))
        assert (full.form, compact.form) == ("full", "compact")
        assert compact.family == full.family == name and compact.skill == full.skill


def test_full_form_is_the_default_and_unknown_forms_are_refused():
    assert render(random.Random(3)) == render(random.Random(3), form="full")
    assert render_many(20, seed=4) == render_many(20, seed=4, form="full")
    assert all(p.form == "full" for p in render_many(36, seed=4))
    drawn = render(random.Random(3), form="compact")
    assert drawn.form == "compact" and drawn.family in COMPACT_FAMILIES
    with pytest.raises(ValueError, match="form"):
        render(random.Random(3), form="short")
    with pytest.raises(ValueError, match="form"):
        render_many(3, form="short")


@pytest.mark.parametrize("family", sorted(COMPACT_FAMILIES))
def test_compact_renders_are_short_scaffold_subclasses(family):
    first = [COMPACT_FAMILIES[family](random.Random(seed)) for seed in range(8)]
    again = [render(random.Random(seed), family, form="compact") for seed in range(8)]
    assert first == again
    assert len({r.code for r in first}) == 8
    base = COMPACT_BASES[family]
    for r in first:
        lines = r.code.rstrip("\n").split("\n")
        head = re.fullmatch(rf"class (\w+Env)\({base}\):", lines[0])
        assert head, lines[0]
        assert re.fullmatch(r'    """[^"\n]+"""', lines[1]), lines[1]
        assert len(r.code) < 1200 and 8 <= len(lines) <= 35, (len(r.code), len(lines))
        assert "import " not in r.code and runtime.env_class_names(r.code) == [head.group(1)]
        assert ("def solve(self):" in r.code) == (base == "GameEnv")
        assert ("def generate(self, rng):" in r.code) == (base == "QuestionEnv")
        assert r.form == "compact" and r.family == family and r.skill
        assert r.hint and "\n" not in r.hint and len(r.hint) <= 200


def _play(cls, replies, seed, difficulty):
    env = runtime.instantiate(cls, 25, {"difficulty": difficulty})
    env.reset(seed)
    reward, done = 0.0, False
    for reply in replies:
        _obs, reward, done, truncated, _info = env.step(runtime.game_action(reply))
        if done or truncated:
            break
    return done and reward > 0


@pytest.mark.parametrize("family", sorted(COMPACT_FAMILIES))
def test_compact_solutions_win_at_every_difficulty_and_constants_lose(family):
    for seed in range(3):
        code = COMPACT_FAMILIES[family](random.Random(100 + seed)).code
        namespace = runtime.build_namespace()
        exec(compile(code, f"<{family}>", "exec"), namespace)
        cls = runtime.find_env_class(code, namespace)
        for difficulty in (1, 2, 3):
            wins = {reply: 0 for reply in ("\\boxed{1}", "\\boxed{0}", "\\boxed{42}", "\\boxed{A}")}
            for episode in range(6):
                env = runtime.instantiate(cls, 25, {"difficulty": difficulty})
                env.reset(episode)
                solution = env.solution()
                assert _play(cls, solution, episode, difficulty), (difficulty, episode, code)
                for reply in wins:
                    wins[reply] += _play(cls, [reply] * 25, episode, difficulty)
            assert max(wins.values()) <= 1, (difficulty, wins, code)


@pytest.mark.slow
def test_two_compact_renders_of_every_family_pass_the_real_validator():
    rng = random.Random(2025)
    rendered = [
        render(rng, name, form="compact") for name in sorted(COMPACT_FAMILIES) for _ in range(2)
    ]
    # a compact file has no header; declaring the levels makes the validator replay the solution
    # at every difficulty, not only at the default one
    programs = [
        dataclasses.replace(
            Program.from_code(r.code, source=f"template:{r.family}", hint=r.hint, skill=r.skill),
            metadata={"difficulty": "1-3"},
        )
        for r in rendered
    ]

    async def run():
        async with Sandbox() as sandbox:
            return await validate_many(
                programs,
                sandbox,
                ValidatorConfig(solution_seeds=2),
                pool=bundled.seed_programs(),
            )

    verdicts = asyncio.run(run())
    failed = [
        f"{r.family}: {[(f.check, f.reason) for f in v.failures]}"
        for r, v in zip(rendered, verdicts)
        if not v.admitted
    ]
    assert not failed, "\n".join(failed)
    assert all(v.stats.get("solution") == "wins" for v in verdicts)


def test_many_compact_renders_are_distinct_and_rarely_near_duplicates():
    programs = render_many(540, seed=1, form="compact")
    assert len({p.code for p in programs}) == 540
    assert {p.family for p in programs} == set(COMPACT_FAMILIES)
    assert all(p.form == "compact" for p in programs)
    fraction, same_family = near_duplicate_fraction(programs)
    mean_chars = sum(len(p.code) for p in programs) / len(programs)
    print(
        f"\n{len(same_family)} same-family compact pairs: {fraction:.2%} near-duplicates, mean "
        f"Jaccard {sum(same_family) / len(same_family):.2f}, max {max(same_family):.2f}; "
        f"{mean_chars:.0f} characters per program"
    )
    assert fraction < 0.01
    assert 500 <= mean_chars <= 1000


def test_render_many_over_chosen_families_only():
    from spade.templates import render_many

    some = ["knapsack", "grid_walk"]
    rendered = render_many(10, seed=3, form="compact", families=some)
    assert {r.family for r in rendered} == set(some) and len({r.code for r in rendered}) == 10
    assert [r.code for r in render_many(4, seed=0)] == [
        r.code for r in render_many(4, seed=0, families=sorted(FAMILIES))
    ]
    with pytest.raises(ValueError, match="unknown"):
        render_many(2, families=["no_such_family"])
