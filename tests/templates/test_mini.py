"""Mini families (spade.templates.mini): one-question environments that pass the real validator."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import random

import pytest

from spade.envs import bundled
from spade.envs.checks import ValidatorConfig
from spade.envs.validate import validate_many
from spade.sandbox import Sandbox, runtime
from spade.templates.mini import (
    MINI_EVAL_FAMILIES,
    MINI_FAMILIES,
    render_mini,
    render_mini_many,
)
from spade.types import GAME_SKILLS, Program


def _wins(cls, reply: str, seed: int, difficulty: int) -> bool:
    env = runtime.instantiate(cls, 25, {"difficulty": difficulty})
    env.reset(seed)
    _, reward, terminated, _, _ = env.step(reply)
    return bool(terminated and reward > 0)


@pytest.mark.parametrize("family", sorted(MINI_FAMILIES))
def test_mini_solutions_win_and_constants_mostly_lose(family):
    for render_seed in range(3):
        rendered = MINI_FAMILIES[family](random.Random(render_seed))
        assert rendered.family == family and rendered.form == "compact"
        assert rendered.skill in GAME_SKILLS
        assert len(rendered.code.splitlines()) <= 10
        namespace = runtime.build_namespace()
        exec(compile(rendered.code, f"<{family}>", "exec"), namespace)
        cls = runtime.find_env_class(rendered.code, namespace)
        for difficulty in (1, 2, 3):
            constant_wins = 0
            for seed in range(8):
                env = runtime.instantiate(cls, 25, {"difficulty": difficulty})
                env.reset(seed)
                (answer,) = env.solution()
                assert _wins(cls, answer, seed, difficulty), (family, difficulty, seed)
                constant_wins += sum(
                    _wins(cls, c, seed, difficulty) for c in ("\\boxed{1}", "\\boxed{42}")
                )
            assert constant_wins <= 2, (family, difficulty, rendered.code)


@pytest.mark.slow
def test_one_render_of_every_mini_family_passes_the_real_validator():
    rng = random.Random(7)
    rendered = [render_mini(rng, name) for name in sorted(MINI_FAMILIES)]
    programs = [
        dataclasses.replace(
            Program.from_code(r.code, source=f"mini:{r.family}", hint=r.hint, skill=r.skill),
            metadata={"difficulty": "1-3"},
        )
        for r in rendered
    ]

    async def run():
        async with Sandbox() as sandbox:
            return await validate_many(
                programs, sandbox, ValidatorConfig(solution_seeds=2), pool=bundled.seed_programs()
            )

    verdicts = asyncio.run(run())
    failed = [
        f"{r.family}: {[(f.check, f.reason) for f in v.failures]}"
        for r, v in zip(rendered, verdicts)
        if not v.admitted
    ]
    assert not failed, "\n".join(failed)


def test_render_mini_many_is_balanced_deterministic_and_leaves_out_the_eval_families():
    programs = render_mini_many(120, seed=3)
    counts = collections.Counter(p.family for p in programs)
    assert set(counts) == set(MINI_FAMILIES) - set(MINI_EVAL_FAMILIES)
    assert set(counts.values()) == {10}
    assert [p.code for p in programs] == [p.code for p in render_mini_many(120, seed=3)]
    assert [p.code for p in programs] != [p.code for p in render_mini_many(120, seed=4)]
    only = render_mini_many(4, seed=0, families=["sum"])
    assert {p.family for p in only} == {"sum"}


def test_one_mini_evaluation_family_per_skill():
    skills = [MINI_FAMILIES[f](random.Random(0)).skill for f in MINI_EVAL_FAMILIES]
    assert sorted(skills) == sorted(GAME_SKILLS)


def test_the_evaluation_set_holds_the_mini_evaluation_families():
    from spade.evals.sets import eval_programs

    sources = {p.source.split("/")[0] for p in eval_programs()}
    assert {f"eval:mini:{f}" for f in MINI_EVAL_FAMILIES} <= sources
