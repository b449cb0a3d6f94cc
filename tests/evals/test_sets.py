"""The paired evaluation sets (`spade.evals.sets`): promised sizes, deterministic, what each item
asks; a sample of every family played in the sandbox: its own `solution()` wins, a wrong reply
loses, a right one wins; the learning curve's fixed subset."""

from __future__ import annotations

import ast
import asyncio
import re
import sys
from collections.abc import Sequence

import pytest

from spade import templates
from spade.backends.base import Message, SamplingParams
from spade.evals import sets as evalsets
from spade.evals.sets import eval_programs
from spade.evals.winrate import EvalResult, evaluate_items, evaluate_solutions
from spade.sandbox import Sandbox, SandboxConfig
from spade.templates import questions
from spade.templates.mini import MINI_EVAL_FAMILIES, MINI_FAMILIES
from spade.types import Program
from tests.support.scripted import ScriptedPolicy


def _observation(program: Program) -> str:
    match = re.search(r"return (.*), \{\}\n", program.code)
    assert match, program.source
    return str(ast.literal_eval(match.group(1)))


def _answer(program: Program) -> str:
    match = re.search(r"expected = (.*)\.lower\(\)", program.code)
    assert match, program.source
    return str(ast.literal_eval(match.group(1)))


def _family(program: Program) -> str:
    return program.source.split(":", 1)[1].rsplit("/", 1)[0]


def test_the_near_set_renders_every_trained_family_10_times_in_trained_wording() -> None:
    near = evalsets.near_set()
    n = 10 * len(questions.TRAIN_FAMILIES)  # 28 families
    assert near.name == "near" and len(near.programs) == n >= 200 and near.preload == ()
    assert {f: len(v) for f, v in near.families.items()} == {
        f"near:{f}": 10 for f in sorted(questions.TRAIN_FAMILIES)
    }
    assert [p.source for p in near.programs[:2]] == ["near:add/0", "near:add/1"]
    assert len({p.code for p in near.programs}) == n  # no item twice
    for p in near.programs:
        assert p.skill == questions.SKILL and p.hint == ""
        text = _observation(p)
        assert any(text.endswith(" " + i) for i in questions.TRAIN_INSTRUCTIONS), text
    # the reference's instruction about half of the time, as the warm start shows it
    reference = questions.REFERENCE_INSTRUCTION
    shown = sum(_observation(p).endswith(reference) for p in near.programs)
    assert 0.4 * n <= shown <= 0.6 * n


def test_the_far_set_asks_held_out_families_with_held_out_wording_on_half_the_items() -> None:
    far = evalsets.far_set(reasoning_gym=False)
    assert len(far.programs) == 16 * len(questions.HELDOUT_FAMILIES) == 112 and far.preload == ()
    assert {f: len(v) for f, v in far.families.items()} == {
        f"far:{f}": 16 for f in sorted(questions.HELDOUT_FAMILIES)
    }
    assert not set(map(_family, far.programs)) & set(questions.TRAIN_FAMILIES)
    for p in far.programs:
        i = int(p.source.rsplit("/", 1)[1])
        text = _observation(p)
        held_out_instruction = any(text.endswith(" " + h) for h in questions.HELDOUT_INSTRUCTIONS)
        assert held_out_instruction == ((i // 2) % 2 == 1), text
    # item i of a family asks in the held-out phrasing exactly when i is odd ("What is one half
    # of n?" is half's held-out phrasing), and its answer is right
    halves = [p for p in far.programs if _family(p) == "half"]
    assert len(halves) == 16
    for p in halves:
        i = int(p.source.rsplit("/", 1)[1])
        text = _observation(p)
        assert text.startswith("What is one half") == (i % 2 == 1), text
        n = int(re.findall(r"\d+", text)[0])
        assert _answer(p) == str(n // 2)


def test_the_far_set_adds_reasoning_gym_level_0_items_when_installed() -> None:
    pytest.importorskip("reasoning_gym")
    far = evalsets.far_set()
    assert len(far.programs) == 152 >= 150 and far.preload == ("reasoning_gym",)
    families = far.families
    assert len(families["far:reasoning-gym:chain_sum"]) == 20
    assert len(families["far:reasoning-gym:letter_counting"]) == 20
    assert far.programs[112].source == "far:reasoning-gym:chain_sum/0"
    assert "NAME, SEED, INDEX, LEVEL = 'chain_sum', 0, 0, 0" in far.programs[112].code
    assert far.content_hash != evalsets.far_set(reasoning_gym=False).content_hash


def test_the_sets_are_deterministic() -> None:
    near, far = evalsets.near_set.__wrapped__(), evalsets.far_set.__wrapped__(False)
    assert [p.code for p in near.programs] == [p.code for p in evalsets.near_set().programs]
    assert near.content_hash == evalsets.near_set().content_hash
    assert far.content_hash == evalsets.far_set(reasoning_gym=False).content_hash
    assert near.content_hash != far.content_hash
    assert evalsets.paired_sets()[0] is evalsets.near_set()


def test_the_learning_curve_subset_takes_every_family_in_turn() -> None:
    near = evalsets.near_set()
    families = len(questions.TRAIN_FAMILIES)
    chosen = evalsets.subset_indices(near, 3 * families)
    assert len(chosen) == 3 * families == len(set(chosen)) and chosen == sorted(chosen)
    # the first three items of each family
    assert chosen == [10 * f + k for f in range(families) for k in range(3)]
    # every family once, then the second item of the first two families
    assert evalsets.subset_indices(near, families + 2)[:3] == [0, 1, 10]
    subset = evalsets.near_subset(3 * families)
    assert [p.source for p in subset.programs] == [near.programs[i].source for i in chosen]
    with pytest.raises(ValueError):
        evalsets.subset_indices(near, 0)
    assert len(evalsets.subset_indices(near, 1000)) == 10 * families


# --- played in the sandbox ------------------------------------------------------------------------


def _sample(programs: Sequence[Program], per_family: int) -> list[Program]:
    taken: dict[str, int] = {}
    out = []
    for p in programs:
        family = p.source.rsplit("/", 1)[0]
        if taken.get(family, 0) < per_family:
            taken[family] = taken.get(family, 0) + 1
            out.append(p)
    return out


def _solutions(programs: Sequence[Program], config: SandboxConfig) -> EvalResult:
    async def run() -> EvalResult:
        async with Sandbox(config) as sandbox:
            return await evaluate_solutions(sandbox, programs, seeds=[0], max_turns=1)

    return asyncio.run(run())


def test_every_family_s_solution_wins_in_the_sandbox() -> None:
    far = evalsets.far_set()
    programs = _sample(evalsets.near_set().programs, 2) + _sample(far.programs, 2)
    result = _solutions(programs, far.sandbox_config(SandboxConfig()))
    assert result.errors == 0
    assert result.overall.wins == result.overall.episodes == len(programs) >= 48


def test_a_wrong_reply_loses_and_the_right_one_wins() -> None:
    far = evalsets.far_set()
    programs = _sample(evalsets.near_set().programs, 1) + _sample(far.programs, 1)
    answers = {_observation(p): _answer(p) for p in programs if p.skill == questions.SKILL}

    def right(messages: Sequence[Message]) -> str:
        text = str(messages[-1]["content"])
        return f"so \\boxed{{{answers.get(text, 'zzz')}}}"

    def play(reply: object) -> list[bool]:
        async def run() -> list[bool]:
            async with Sandbox(far.sandbox_config(SandboxConfig())) as sandbox:
                won, result = await evaluate_items(
                    ScriptedPolicy(reply),  # type: ignore[arg-type]
                    sandbox,
                    programs,
                    params=SamplingParams(max_tokens=32, temperature=0.0),
                    max_turns=1,
                )
                assert result.errors == 0
                return won

        return asyncio.run(run())

    assert play(lambda messages: "\\boxed{zzz}") == [False] * len(programs)
    assert play(lambda messages: "no box at all") == [False] * len(programs)
    won = play(right)
    questions_only = [p.skill == questions.SKILL for p in programs]
    assert won == questions_only and sum(won) == len(questions.FAMILIES)  # one of each family


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")
def test_eval_programs_are_deterministic_valid_environments() -> None:
    import asyncio

    from spade.envs.checks import ValidatorConfig
    from spade.envs.validate import validate_many
    from spade.sandbox import Sandbox

    programs = eval_programs()
    assert [p.code for p in programs] == [p.code for p in eval_programs()]
    # 12 template renders of held-out families, 6 held-out mini families, 12 trained ones
    assert len({p.env_id for p in programs}) == len(programs) == 30
    assert {p.skill for p in programs} == set(templates.SKILL_FAMILIES)
    families = [p.source.rsplit("/", 1)[0] for p in programs]
    held_out = [f for f in families if not f.startswith("eval:mini-seen:")]
    assert sorted({f.split(":")[-1] for f in held_out}) == sorted(
        {*templates.eval_families(), *MINI_EVAL_FAMILIES}
    )
    seen = {f.split(":")[-1] for f in families if f.startswith("eval:mini-seen:")}
    assert seen == set(MINI_FAMILIES) - set(MINI_EVAL_FAMILIES)

    async def run() -> list:
        async with Sandbox() as sandbox:
            return await validate_many(programs, sandbox, ValidatorConfig(probe_seeds=4))

    assert [v.failures for v in asyncio.run(run())] == [()] * len(programs)
