"""Warm-start data (spade/warmstart/data.py): both roles in the loop's formats, evaluation held
out."""

from __future__ import annotations

import re

import pytest

from spade import prompts, templates
from spade.warmstart import data
from spade.warmstart.data import (
    COMPACT_FAMILIES,
    prompts_format,
    source_fingerprint,
    template_examples,
    warm_start_examples,
)


@pytest.fixture(scope="module")
def compact() -> list:
    return warm_start_examples(seed=0, form="compact")


def test_eval_families_are_one_per_game_skill_and_never_trained(monkeypatch) -> None:
    held_out = templates.eval_families()
    assert len(held_out) == len(templates.SKILL_FAMILIES) == 6
    for skill, names in templates.SKILL_FAMILIES.items():
        assert len(set(held_out) & set(names)) == 1, skill
    asked: list[tuple[str, ...]] = []
    real = templates.render_many

    def spy(count, seed=0, **kwargs):
        asked.append(tuple(kwargs.get("families") or templates.FAMILIES))
        return real(min(count, 6), seed=seed, **kwargs)

    monkeypatch.setattr(templates, "render_many", spy)
    # the seeds' solution() replays (a child process, ~8 s a form) are not what this asks about
    monkeypatch.setattr(data, "seed_examples", lambda *args, **kwargs: [])
    for form in ("compact", "full"):
        warm_start_examples(seed=0, form=form)
    assert len(asked) == 2
    assert all(not set(families) & set(held_out) for families in asked)
    compact, full = asked
    assert set(compact) == set(COMPACT_FAMILIES)  # one training family per skill
    skill_of = {f: skill for skill, names in templates.SKILL_FAMILIES.items() for f in names}
    assert {skill_of[f] for f in compact} == set(templates.SKILL_FAMILIES)
    assert len(full) == len(templates.FAMILIES) - 6


def test_compact_designer_turns_are_the_loops_prompt_and_a_compact_program(compact) -> None:
    designer = [e for e in compact if e.role == "designer"]
    assert len(designer) == 1500
    fmt = prompts_format(form="compact")
    system = str(designer[0].messages[0]["content"])
    assert system == str(fmt.designer_prompt("Optimization", 2)[0]["content"])
    assert prompts.COMPACT_EXAMPLE in system
    for e in designer[:200]:
        code = e.target.split("```python\n", 1)[1].split("\n```", 1)[0]
        assert re.search(r"^class \w+Env\((QuestionEnv|GameEnv)\):", code, re.MULTILINE), code
        assert re.search(r"\nHINT: \S", e.target)
        user = str(e.messages[-1]["content"])
        assert user.startswith("Write a new ") and prompts.REPLY_FORMAT in user
        assert sum(len(str(m["content"])) for m in e.messages) <= prompts.TINY_BUDGET_CHARS


def test_agent_turns_replay_solutions_in_the_agent_prompt(compact) -> None:
    agent = [e for e in compact if e.role == "agent"]
    assert len(agent) > 400
    assert all(e.messages[0]["content"] == prompts.GAME_AGENT_SYSTEM for e in agent[:50])
    assert all("\\boxed{" in e.target for e in agent)
    multi = [e for e in agent if len(e.messages) > 2]
    assert multi, "multi-turn episodes (GameEnv programs and seeds) are in the data"


def test_full_form_keeps_the_full_contract_and_difficulty_defaults() -> None:
    full = template_examples(
        count=12, agent_programs=0, form="full", exclude=templates.eval_families()
    )
    assert len(full) == 12
    for e in full:
        assert "reset(seed=None)" in str(e.messages[0]["content"])
        assert "def reset" in e.target and "(QuestionEnv)" not in e.target


def test_fingerprint_covers_the_scaffolds() -> None:
    assert len(source_fingerprint()) == 64
