"""The Designer stage with a scripted policy: extraction, skill rotation, batched attempts."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from spade import prompts
from spade.backends.base import Completion, Message, Policy, Prompt, SamplingParams
from spade.prompts import MAX_HINT_CHARS, PromptSettings, designer_reply
from spade.selfplay import designer
from spade.selfplay.designer import (
    MAX_CODE_CHARS,
    SkillRotation,
    design,
    extract_design,
    extract_hint,
)
from spade.types import GAME_SKILLS, Program

CODE = '''"""Guess the number."""


class GuessEnv:
    def reset(self, seed=None):
        return "guess", {}
'''
GOOD = f"Here it is.\n```python\n{CODE}```\nHINT: Halve the interval.\n"


class ScriptedPolicy:
    """Returns canned replies in order; records every batch it was asked for."""

    def __init__(self, replies: Sequence[str], finish: str = "stop") -> None:
        self.replies = list(replies)
        self.finish = finish
        self.calls: list[tuple[list[Prompt], SamplingParams]] = []

    def sample(self, prompts: Sequence[Prompt | Sequence[Message]], params: SamplingParams):
        batch = [Prompt.of(p) for p in prompts]
        self.calls.append((batch, params))
        out = []
        for _ in batch:
            text = self.replies.pop(0)
            ids = tuple(range(len(text.split()) or 1))
            out.append(
                Completion(text, (1, 2), ids, tuple(-0.5 for _ in ids), self.finish)  # type: ignore[arg-type]
            )
        return out

    def extend(self, prompt: Prompt, completion: Completion, messages: Sequence[Message]):
        raise AssertionError("the designer never extends a conversation")


# --- extraction ---------------------------------------------------------------------------------


def test_good_reply_and_round_trip_of_the_canonical_format() -> None:
    got = extract_design(GOOD)
    assert got.ok and got.code == CODE and got.hint == "Halve the interval."
    again = extract_design(designer_reply(CODE, "Halve the interval."))
    assert again == got


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "no code block"),
        ("I would write a class GuessEnv with reset and step.", "no code block"),
        ('```json\n{"class": 1}\n```\nHINT: x', "no code block"),
        ("```\nprint('no environment here')\n```\nHINT: x", "no code block"),
        ("```python\nclass AEnv:\n    def reset(self", "reply cut off (no closing fence)"),
        ("```\nclass AEnv:\n    pass\n", "reply cut off (no closing fence)"),
        ("```python\n\n   \n```\nHINT: x", "empty code block"),
        (f"```python\n{CODE}```\n", "empty hint"),
        (f"```python\n{CODE}```\nHINT:   \n", "empty hint"),
        (f"HINT: before the block\n```python\n{CODE}```", "empty hint"),
        (f"```python\n{CODE}```\nHINT: use ```print(42)```", "hint contains a code fence"),
    ],
)
def test_extraction_failures_name_their_reason(reply: str, reason: str) -> None:
    got = extract_design(reply)
    assert got.error == reason and not got.ok


def test_two_blocks_take_the_first_python_one_and_the_hint_after_it() -> None:
    reply = (
        "```text\nclass notes\n```\n"  # other language: skipped
        f"```python\n{CODE}```\nHINT: first\n\n```python\nclass BEnv:\n    pass\n```\nHINT: second"
    )
    got = extract_design(reply)
    assert got.code == CODE and got.hint == "first"


def test_untagged_fence_with_a_class_counts_and_hint_variants() -> None:
    got = extract_design(f"```\n{CODE}```\n**Hint:** Halve it,\nthen halve again.\n\nBye")
    assert got.code == CODE and got.hint == "Halve it,\nthen halve again."


def test_hint_is_capped_and_optional_when_asked_separately() -> None:
    got = extract_design(f"```python\n{CODE}```\nHINT: {'a' * 2000}")
    assert got.ok and got.hint == "a" * MAX_HINT_CHARS
    code_only = extract_design(f"```python\n{CODE}```", require_hint=False)
    assert code_only.ok and code_only.code == CODE and code_only.hint == ""


def test_huge_replies_are_refused_quickly() -> None:
    huge = "```python\n" + "x = 1\n" * (MAX_CODE_CHARS // 6 + 10) + "```\nHINT: h"
    assert extract_design(huge).error.startswith("code block too long")  # type: ignore[union-attr]
    junk = "y" * 5_000_000
    assert extract_design(junk).error == "no code block"


def test_extract_hint_for_the_separate_call() -> None:
    assert extract_hint("HINT: look left") == ("look left", None)
    assert extract_hint("  Look left first.  ") == ("Look left first.", None)
    assert extract_hint("") == ("", "empty hint")
    assert extract_hint("```python\nx\n```") == ("", "hint contains a code fence")


# --- skill rotation -----------------------------------------------------------------------------


def test_rotation_windows_cover_every_skill() -> None:
    rotation = SkillRotation(GAME_SKILLS, active=3)
    assert rotation.window(0) == GAME_SKILLS[:3]
    assert rotation.window(1) == GAME_SKILLS[3:]
    assert rotation.window(2) == rotation.window(0)  # a pure function of regen
    odd = SkillRotation(GAME_SKILLS[:5], active=3)
    assert set(odd.window(0) + odd.window(1)) == set(GAME_SKILLS[:5])
    assert odd.window(1) == (GAME_SKILLS[3], GAME_SKILLS[4], GAME_SKILLS[0])
    assert SkillRotation(["A", "B"], active=5).window(7) == ("A", "B")
    per_env = rotation.skills_for(1, 24)
    assert len(per_env) == 24 and all(per_env.count(s) == 8 for s in GAME_SKILLS[3:])


def test_rotation_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        SkillRotation([])
    with pytest.raises(ValueError):
        SkillRotation(["A", "A"])
    with pytest.raises(ValueError):
        SkillRotation(["A"], active=0)
    with pytest.raises(ValueError):
        SkillRotation(["A"]).window(-1)


# --- design -------------------------------------------------------------------------------------

DOCS = [
    {"title": f"Doc {i}", "text": f"Text of document {i}. " * 50, "source": "test"}
    for i in range(5)
]
POOL = [Program.from_code(CODE.replace("Guess", f"Guess{i}"), hint=f"h{i}") for i in range(10)]
PARAMS = SamplingParams(max_tokens=64, seed=3)


def _design(policy: Policy, skills: Sequence[str], seed: int = 0, **kwargs):
    defaults = dict(
        iteration=4,
        regen=1,
        skills_per_env=skills,
        rng=random.Random(seed),
        params=PARAMS,
        documents=DOCS,
        exemplars_for=lambda skill: POOL,
        negative_for=lambda skill: (POOL[9], "too hard"),
    )
    defaults.update(kwargs)
    return design(policy, **defaults)  # type: ignore[arg-type]


def test_design_samples_once_and_keeps_every_attempt() -> None:
    replies = [
        GOOD,
        "",
        "no code, sorry",
        f"```python\n{CODE}```",
        "```python\ndef f(:\n```\nHINT: h",
    ]
    policy = ScriptedPolicy(replies)
    skills = [
        "Optimization",
        "Logical Deduction",
        "Optimization",
        "Causal Inference",
        "Optimization",
    ]
    attempts = _design(policy, skills, first_attempt=10)

    assert len(policy.calls) == 1 and len(policy.calls[0][0]) == 5
    assert policy.calls[0][1] == PARAMS
    assert [a.skill for a in attempts] == skills
    assert [a.attempt_index for a in attempts] == [10, 11, 12, 13, 14]
    assert [a.error for a in attempts] == [
        None,
        "no code block",
        "no code block",
        "empty hint",
        None,
    ]

    good = attempts[0]
    assert good.program is not None
    assert good.program.source == "design:it4/optimization/10"
    assert good.program.hint == "Halve the interval." and good.program.skill == "Optimization"
    assert good.program.description == "Guess the number."
    assert good.completion.text == GOOD and good.completion.logprobs is not None
    assert good.prompt == policy.calls[0][0][0]
    assert good.iteration == 4 and good.regen == 1
    assert len(good.exemplar_ids) == 2 and set(good.exemplar_ids) <= {p.env_id for p in POOL}
    assert good.document_title in {d["title"] for d in DOCS}
    assert "which was too hard" in good.prompt.messages[1]["content"]
    # a syntax error is the validator's to report: the program is passed on
    assert attempts[4].program is not None and attempts[4].program.code == "def f(:\n"
    assert all(a.program is None for a in attempts[1:4])


def test_design_is_deterministic_in_its_rng() -> None:
    skills = ["Optimization"] * 4
    first = _design(ScriptedPolicy([GOOD] * 4), skills, seed=7)
    second = _design(ScriptedPolicy([GOOD] * 4), skills, seed=7)
    other = _design(ScriptedPolicy([GOOD] * 4), skills, seed=8)
    key = [(a.prompt, a.exemplar_ids, a.document_title) for a in first]
    assert key == [(a.prompt, a.exemplar_ids, a.document_title) for a in second]
    assert key != [(a.prompt, a.exemplar_ids, a.document_title) for a in other]


def test_design_under_a_small_budget_drops_exemplars() -> None:
    attempts = _design(
        ScriptedPolicy([GOOD]), ["Optimization"], settings=PromptSettings(budget_chars=1500)
    )
    prompt = attempts[0].prompt
    assert sum(len(m["content"]) for m in prompt.messages) <= 1500
    assert attempts[0].exemplar_ids == ()


def test_design_without_documents_or_memory() -> None:
    attempts = design(
        ScriptedPolicy([GOOD]),
        iteration=0,
        regen=0,
        skills_per_env=["Data Retrieval"],
        rng=random.Random(0),
        params=PARAMS,
    )
    assert attempts[0].program is not None and attempts[0].document_title is None
    assert "ToolUseBaseEnv" in attempts[0].prompt.messages[0]["content"]
    assert design(ScriptedPolicy([]), iteration=0, regen=0, skills_per_env=[],
                  rng=random.Random(0), params=PARAMS) == []  # fmt: skip


def test_garbage_never_raises() -> None:
    garbage = [
        "\x00\x01" * 1000,
        "```python\n" + "-" * 5000 + "1\n```\nHINT: h",  # ast.parse raises RecursionError
        "```python\n" + "not " * 20000 + "x\n```\nHINT: h",  # ... and MemoryError
        "```" * 1000,
        "HINT: only a hint",
    ]
    attempts = _design(ScriptedPolicy(garbage), ["Optimization"] * len(garbage))
    assert [a.program is not None for a in attempts] == [False, True, True, False, False]
    assert attempts[1].program is not None and attempts[1].program.hint == "h"


def test_cut_replies_say_so() -> None:
    attempts = _design(ScriptedPolicy([f"```python\n{CODE}```", "```python\nx"], "length"),
                       ["Optimization"] * 2)  # fmt: skip
    assert attempts[0].error == "empty hint (the reply reached max_tokens)"
    assert attempts[1].error == "reply cut off (no closing fence)"


def test_separate_hint_mode_makes_a_second_batched_call_for_extracted_code_only() -> None:
    replies = [
        f"```python\n{CODE}```",  # code only, as asked
        "nothing",
        f"```python\n{CODE.replace('Guess', 'Other')}```",
        "HINT: halve it",  # hint call for attempt 0
        "```python\nprint(1)\n```",  # hint call for attempt 2: a fence
    ]
    policy = ScriptedPolicy(replies)
    attempts = _design(policy, ["Optimization"] * 3, settings=PromptSettings(separate_hint=True))

    assert len(policy.calls) == 2
    code_batch, _ = policy.calls[0]
    hint_batch, hint_params = policy.calls[1]
    assert len(code_batch) == 3 and len(hint_batch) == 2
    assert code_batch[0].messages[1]["content"].endswith(prompts.REPLY_FORMAT_CODE_ONLY)
    assert "class GuessEnv" in hint_batch[0].messages[1]["content"]
    assert hint_params.max_tokens == min(PARAMS.max_tokens, designer.HINT_MAX_TOKENS)

    assert attempts[0].error is None and attempts[0].program is not None
    assert attempts[0].program.hint == "halve it"
    assert attempts[0].completion.text == replies[0]  # the trained sample is the code call
    assert attempts[0].hint_completion is not None
    assert attempts[0].hint_completion.text == "HINT: halve it"
    assert attempts[1].error == "no code block" and attempts[1].hint_prompt is None
    assert attempts[2].error == "hint call: hint contains a code fence"
    assert attempts[2].program is None


def test_a_backend_returning_the_wrong_count_fails_loudly() -> None:
    class Short(ScriptedPolicy):
        def sample(self, prompts, params):
            return super().sample(prompts, params)[:-1]

    with pytest.raises(ValueError, match="completions"):
        _design(Short([GOOD, GOOD]), ["Optimization"] * 2)


def test_designer_never_imports_the_sandbox_or_validator() -> None:
    source = designer.__file__
    with open(source, encoding="utf-8") as f:
        text = f.read()
    imports = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert all("sandbox" not in line and "validate" not in line for line in imports)
