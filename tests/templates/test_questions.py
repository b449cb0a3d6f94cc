"""Question families: drawn deterministically, taught with a worked step, run in the sandbox."""

from __future__ import annotations

import asyncio
import random

import pytest

from spade.envs.checks import ValidatorConfig
from spade.envs.validate import validate
from spade.sandbox import Sandbox
from spade.templates import questions as Q
from spade.types import Program
from spade.warmstart.data import question_examples


def test_train_and_heldout_families_and_instructions_are_apart():
    assert not set(Q.TRAIN_FAMILIES) & set(Q.HELDOUT_FAMILIES)
    assert len(Q.TRAIN_FAMILIES) >= 12 and len(Q.HELDOUT_FAMILIES) >= 6
    assert not set(Q.TRAIN_INSTRUCTIONS) & set(Q.HELDOUT_INSTRUCTIONS)
    assert Q.TRAIN_INSTRUCTIONS[0] == "Give your final answer as \\boxed{answer}."


@pytest.mark.parametrize("family", sorted(Q.FAMILIES))
def test_a_family_is_deterministic_and_its_reply_boxes_the_answer(family):
    a = [Q.draw(family, random.Random(s), level) for s in range(20) for level in (1, 2, 3)]
    b = [Q.draw(family, random.Random(s), level) for s in range(20) for level in (1, 2, 3)]
    assert a == b
    assert len({q.text for q in a}) > 5  # it varies with the seed
    for q in a:
        assert q.answer and q.step
        assert Q.reply(q) == f"{q.step}, so \\boxed{{{q.answer}}}"


@pytest.mark.parametrize("family", sorted(Q.FAMILIES))
def test_the_held_out_phrasing_is_never_drawn_for_training(family):
    trained = {Q.draw(family, random.Random(s), 1).text for s in range(200)}
    held = {Q.draw(family, random.Random(s), 1, held_out=True).text for s in range(200)}
    assert not trained & held


def test_draw_refuses_unknown_families_and_levels():
    with pytest.raises(ValueError, match="unknown question family 'sum'"):
        Q.draw("sum", random.Random(0))
    with pytest.raises(ValueError, match="level must be 1, 2 or 3"):
        Q.draw("add", random.Random(0), level=0)


def test_the_warm_start_questions_use_only_trained_families_phrasings_and_instructions():
    examples = question_examples(count=400, seed=3)
    assert examples == question_examples(count=400, seed=3)
    texts = [str(e.messages[-1]["content"]) for e in examples]
    assert all(e.role == "agent" and "\\boxed{" in e.target for e in examples)
    assert sum(Q.REFERENCE_INSTRUCTION in t for t in texts) > 120  # about half
    assert not any(i in t for t in texts for i in Q.HELDOUT_INSTRUCTIONS)
    held = {
        Q.draw(f, random.Random(s), lv, held_out=True).text
        for f in Q.TRAIN_FAMILIES
        for s in range(50)
        for lv in (1, 2, 3)
    }
    assert not any(t.split("\n")[0] in held for t in texts)
    heldout_openings = ("What is half of", "What is three times", "What number comes just")
    assert not any(t.startswith(heldout_openings) for t in texts)


@pytest.mark.slow
def test_question_environments_ask_the_familys_question_and_pass_the_validator():
    async def check() -> None:
        async with Sandbox() as sandbox:
            for family in sorted(Q.FAMILIES):
                program = Program.from_code(Q.question_env(family), skill=Q.SKILL)
                verdict = await validate(program, sandbox, ValidatorConfig(probe_seeds=4))
                assert verdict.admitted, (family, verdict.failures)
            for family in ("add", "count_letter", "half"):
                code = Q.question_env(family)
                async with await sandbox.open(code, kwargs={"difficulty": 1}) as env:
                    obs, _ = await env.reset(seed=7)
                    q = Q.draw(family, random.Random(7), 1)
                    assert obs == f"{q.text}\n{Q.REFERENCE_INSTRUCTION}"
                    won = await env.step(Q.reply(q))
                    assert won.reward == 1.0 and won.terminated
                    await env.reset(seed=7)
                    lost = await env.step("\\boxed{not it}")
                    assert lost.reward == 0.0 and lost.terminated

    asyncio.run(check())


def test_a_fixed_question_environment_is_won_by_its_answer_only():
    q = Q.draw("parity", random.Random(1), 1)
    code = Q.fixed_question_env(q, Q.HELDOUT_INSTRUCTIONS[0], name="ParityEnv")
    with pytest.raises(ValueError, match="ends in 'Env'"):
        Q.fixed_question_env(q, Q.REFERENCE_INSTRUCTION, name="Parity")

    async def check() -> None:
        async with Sandbox() as sandbox:
            async with await sandbox.open(code) as env:
                obs, _ = await env.reset(seed=0)
                assert obs == f"{q.text} {Q.HELDOUT_INSTRUCTIONS[0]}"
                assert (await env.step(f"so \\boxed{{{q.answer.upper()}}}")).reward == 1.0
                await env.reset(seed=0)
                assert (await env.step(q.answer)).reward == 0.0  # no box, no win
                await env.reset(seed=0)
                other = "odd" if q.answer == "even" else "even"
                assert (await env.step(f"\\boxed{{{other}}}")).reward == 0.0

    asyncio.run(check())
