"""Prompt rendering: the quoted contract, determinism, the character budget, the Agent's turn."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spade import prompts
from spade.config import DesignConfig
from spade.prompts import (
    ALL_CONTRACT_FRAGMENTS,
    REPLY_FORMAT,
    REPLY_FORMAT_CODE_ONLY,
    PromptSettings,
    agent_messages,
    designer_messages,
    designer_prompt,
    designer_system,
    hint_messages,
    observation_message,
)
from spade.types import Program

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("**", ""))


def _program(name: str, body_lines: int = 5, hint: str = "think", skill: str = "Optimization"):
    body = "\n".join(f"        self.x{i} = {i}" for i in range(body_lines))
    code = (
        f'"""A {name} puzzle.\n\nskill: {skill}\n"""\n\n\nclass {name}Env:\n'
        f"    def __init__(self, max_turns=25):\n{body}\n"
    )
    return Program.from_code(code, hint=hint, source=f"{name}.py")


LONG_DOC = {"title": "Tides", "text": " ".join(f"word{i}" for i in range(10_000)), "source": "x"}
EXEMPLARS = (_program("Alpha", 100), _program("Beta", 100), _program("Gamma", 100))
NEGATIVE = (_program("Easy"), "too easy")


def _chars(messages) -> int:
    return sum(len(m["content"]) for m in messages)


def test_every_quoted_contract_fragment_is_in_the_environment_contract_page() -> None:
    page = _normalise((DOCS / "environments.md").read_text(encoding="utf-8"))
    missing = [f for f in ALL_CONTRACT_FRAGMENTS if _normalise(f) not in page]
    assert missing == []


def test_reply_format_is_documented_verbatim() -> None:
    page = (DOCS / "designer.md").read_text(encoding="utf-8")
    assert REPLY_FORMAT in page
    assert REPLY_FORMAT_CODE_ONLY in page


def test_system_quotes_the_contract_for_the_kind() -> None:
    game, tool = designer_system("game"), designer_system("tool")
    for text, _essential in prompts.CONTRACT + prompts.CONTRACT_GAME:
        assert text in game
    for text, _essential in prompts.CONTRACT + prompts.CONTRACT_TOOL:
        assert text in tool
    assert "ToolUseBaseEnv" not in game and "\\boxed" not in tool
    compact = designer_system("game", compact=True)
    assert len(compact) < len(game) / 3
    for text, essential in prompts.CONTRACT + prompts.CONTRACT_GAME:
        assert (text in compact) == essential
    with pytest.raises(ValueError, match="kind"):
        designer_system("board")


def test_skill_picks_the_contract_and_the_task_line() -> None:
    game = designer_messages("Optimization", "hard")
    tool = designer_messages("Error Recovery", "easy")
    assert game[0]["content"] == prompts.DESIGNER_SYSTEM
    assert tool[0]["content"] == designer_system("tool")
    assert game[1]["content"].startswith(
        "Write a new hard environment that trains the skill: Optimization."
    )
    assert game[1]["content"].endswith(REPLY_FORMAT)
    code_only = designer_messages("Optimization", with_hint=False)
    assert code_only[1]["content"].endswith(REPLY_FORMAT_CODE_ONLY)


def test_rendering_is_deterministic() -> None:
    args = ("Logical Deduction", "medium", LONG_DOC, EXEMPLARS, NEGATIVE)
    assert designer_messages(*args) == designer_messages(*args)
    assert designer_messages(*args, 3000) == designer_messages(*args, 3000)


def test_no_budget_gives_the_paper_prompt() -> None:
    rendered = designer_prompt(
        "Optimization", PromptSettings("medium", None), LONG_DOC, EXEMPLARS, NEGATIVE
    )
    user = rendered.messages[1]["content"]
    assert [p.env_id for p in rendered.exemplars] == [p.env_id for p in EXEMPLARS[:2]]
    assert "Example 1 of a good environment (Optimization):\n```python\n" in user
    assert "class BetaEnv" in user and "class GammaEnv" not in user
    assert "HINT: think" in user
    assert "which was too easy: A Easy puzzle.\n\nReply with" in user
    assert prompts.GROUNDING_LINE + "\nDocument: Tides\nword0 word1" in user
    assert "word5999\n" in user and "word6000" not in user  # 6,000 words
    assert rendered.document_title == "Tides" and not rendered.compact
    # layout order: task, document, exemplars, negative, reply format
    order = [user.index(s) for s in ("Write a new", "Document:", "Example 1", "Do not", "Reply")]
    assert order == sorted(order)


def test_tiny_budget_truncates_the_document_and_drops_exemplars() -> None:
    budget = prompts.TINY_BUDGET_CHARS
    rendered = designer_prompt(
        "Optimization", PromptSettings("easy", budget), LONG_DOC, EXEMPLARS, NEGATIVE
    )
    assert rendered.chars <= budget
    assert rendered.compact and rendered.exemplars == ()
    user = rendered.messages[1]["content"]
    assert "Document: Tides\nword0" in user and " ..." in user
    assert "too easy" in user and user.endswith(REPLY_FORMAT)


def test_budget_keeps_exemplars_that_fit_with_room_for_the_document() -> None:
    # budget: the prompt with one exemplar and no document, plus the document reserve (+50)
    one = designer_prompt(
        "Optimization", PromptSettings("medium", None), None, EXEMPLARS[:1], NEGATIVE
    ).chars
    budget = one + 2 + prompts.DOCUMENT_RESERVE_CHARS + 50
    rendered = designer_prompt(
        "Optimization", PromptSettings("medium", budget), LONG_DOC, EXEMPLARS, NEGATIVE
    )
    assert rendered.chars <= budget and not rendered.compact
    assert [p.env_id for p in rendered.exemplars] == [EXEMPLARS[0].env_id]
    assert rendered.document_title == "Tides"
    assert budget - rendered.chars < 10  # the document took up the rest


def test_budget_below_the_fixed_part_still_renders_the_compact_prompt() -> None:
    rendered = designer_prompt(
        "Optimization", PromptSettings("easy", 10), LONG_DOC, EXEMPLARS, NEGATIVE
    )
    assert rendered.compact and rendered.exemplars == () and rendered.document_title is None
    assert "too easy" not in rendered.messages[1]["content"]


def test_short_document_is_shown_whole_and_tiny_remainders_are_dropped() -> None:
    short = {"title": "Knots", "text": "A knot is a closed curve.", "source": "x"}
    user = designer_messages("Optimization", "easy", short, (), None, 1500)[1]["content"]
    assert "Document: Knots\nA knot is a closed curve.\n\n" in user
    fixed = designer_prompt("Optimization", PromptSettings("easy", 1500)).chars
    squeezed = designer_prompt("Optimization", PromptSettings("easy", fixed + 150), LONG_DOC)
    assert squeezed.document_title is None  # under MIN_DOCUMENT_CHARS: left out, not a stub


def test_negative_without_description_is_named_by_its_class() -> None:
    bare = Program.from_code("class MazeEnv:\n    pass\n")
    user = designer_messages("Optimization", negative=(bare, "too hard"))[1]["content"]
    assert "which was too hard: MazeEnv\n" in user


def test_hint_messages_show_the_code() -> None:
    messages = hint_messages("class AEnv:\n    pass\n")
    assert messages[0]["role"] == "system"
    assert "```python\nclass AEnv:\n    pass\n```" in messages[1]["content"]
    assert messages[1]["content"].endswith(prompts.HINT_REPLY_FORMAT)


def test_agent_first_turn_with_and_without_hint() -> None:
    plain = agent_messages("You see 3 doors.", "game", (), None)
    hinted = agent_messages("You see 3 doors.", "game", (), "Try the middle one.")
    assert plain[0] == hinted[0] == {"role": "system", "content": prompts.GAME_AGENT_SYSTEM}
    assert plain[1] == {"role": "user", "content": "You see 3 doors."}
    assert hinted[1] == {"role": "user", "content": "You see 3 doors.\n\nHINT: Try the middle one."}
    assert agent_messages("obs", "game", (), "")[1]["content"] == "obs"
    assert "\\boxed{" in prompts.GAME_AGENT_SYSTEM
    assert observation_message("next") == {"role": "user", "content": "next"}


def test_agent_tool_turn_lists_the_schemas() -> None:
    tool = {
        "type": "function",
        "function": {"name": "lookup", "description": "Find a book", "parameters": {}},
    }
    messages = agent_messages("Find the author.", "tool", (tool,), None)
    system = messages[0]["content"]
    assert system.startswith(prompts.TOOL_AGENT_SYSTEM)
    assert "<tool_call>" in system and "<answer>" in system
    assert system.endswith("Tools:\n" + json.dumps(tool))
    with pytest.raises(ValueError, match="kind"):
        agent_messages("x", "board", (), None)


def test_difficulty_words() -> None:
    assert [prompts.difficulty_word(i) for i in (1, 2, 3, 4)] == [
        "easy",
        "medium",
        "hard",
        "level 4",
    ]


# --- the compact form ---------------------------------------------------------------------------


def test_compact_form_asks_for_a_scaffold_subclass_within_the_budget() -> None:
    from spade.envs import bundled

    doc = bundled.grounding_documents()[0]
    r = prompts.designer_prompt(
        "Logical Deduction", PromptSettings("easy", 1500, form="compact"), doc
    )
    system, user = (str(m["content"]) for m in r.messages)
    assert r.compact and r.chars <= 1500
    assert "QuestionEnv" in system and "GameEnv" in system and prompts.COMPACT_EXAMPLE in system
    assert "reset(seed=None)" not in system  # not the full contract
    assert user.startswith("Write a new easy environment that trains the skill: Logical")
    assert r.document_title == doc["title"] and prompts.REPLY_FORMAT in user
    full = prompts.designer_prompt("Logical Deduction", PromptSettings("easy", 1500), doc)
    assert "QuestionEnv" not in str(full.messages[0]["content"])


def test_compact_form_is_for_games_only_and_checked() -> None:
    tool = prompts.designer_prompt("Data Retrieval", PromptSettings(form="compact"))
    assert "ToolUseBaseEnv" in str(tool.messages[0]["content"]) and not tool.compact
    with pytest.raises(ValueError, match="form must be one of"):
        prompts.designer_system("game", form="tiny")


def test_the_compact_example_is_quoted_in_the_contract_page_and_is_admitted() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "environments.md").read_text()
    assert prompts.COMPACT_EXAMPLE in page
    from tests.sandbox.test_scaffolds import TIMES

    assert TIMES.rstrip("\n") == prompts.COMPACT_EXAMPLE  # the validator test admits TIMES


def test_the_settings_record_renders_as_its_fields_one_by_one() -> None:
    settings = PromptSettings("hard", 1500, form="compact", separate_hint=True)
    loose = designer_messages(
        "Logical Deduction",
        "hard",
        LONG_DOC,
        EXEMPLARS,
        NEGATIVE,
        1500,
        with_hint=False,
        form="compact",
    )
    rendered = designer_prompt("Logical Deduction", settings, LONG_DOC, EXEMPLARS, NEGATIVE)
    assert list(rendered.messages) == loose
    assert PromptSettings.of(DesignConfig()) == PromptSettings(budget_chars=1500, form="compact")
