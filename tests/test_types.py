"""Records that cross stage boundaries (spade/types.py): Program headers and identity, returns."""

from __future__ import annotations

import dataclasses
import json

import pytest

from spade.types import (
    CheckFailure,
    Episode,
    Program,
    Turn,
    Verdict,
    env_id_of,
    episode_return,
    parse_header,
    skill_from_slug,
    skill_slug,
)

HEADER = '''"""Find the hidden number with higher/lower feedback.

skill: Mathematical Reasoning
hint: Halve the remaining interval with every guess.
difficulty: 1-3
Turns: multi
not a key: ignored because the key has a space
"""


class GuessEnv:
    pass
'''


def test_from_code_parses_the_header() -> None:
    p = Program.from_code(HEADER, source="envs/guess.py")
    assert p.description == "Find the hidden number with higher/lower feedback."
    assert p.skill == "Mathematical Reasoning"
    assert p.hint == "Halve the remaining interval with every guess."
    assert dict(p.metadata) == {
        "skill": "Mathematical Reasoning",
        "hint": "Halve the remaining interval with every guess.",
        "difficulty": "1-3",
        "turns": "multi",  # keys are lower-cased
    }
    assert p.source == "envs/guess.py"
    assert p.code == HEADER


def test_from_code_explicit_arguments_override_the_header() -> None:
    p = Program.from_code(HEADER, hint="Try 500 first.", skill="Optimization")
    assert (p.hint, p.skill) == ("Try 500 first.", "Optimization")
    assert Program.from_code(HEADER, hint="").hint == ""


def test_header_value_may_contain_colons() -> None:
    code = '"""Clock game.\n\nhint: start at 12:00, then: think\n"""\n'
    assert Program.from_code(code).hint == "start at 12:00, then: think"


@pytest.mark.parametrize(
    "code",
    ["class AEnv:\n    pass\n", "x = 1\n", "", "def broken(:\n", '"""\n"""\n'],
)
def test_missing_or_unreadable_header(code: str) -> None:
    p = Program.from_code(code)
    assert (p.description, p.skill, p.hint, dict(p.metadata)) == ("", "", "", {})


def test_parse_header_never_runs_code() -> None:
    code = '"""Desc."""\nraise SystemExit("must not run")\n'
    assert parse_header(code) == ("Desc.", {})


def test_skill_from_reference_file_name() -> None:
    code = '"""A reference game with a one-line docstring."""\n\nclass PuzzleEnv:\n    pass\n'
    p = Program.from_code(code, source="pool/run3/game_00012_003_logical_deduction.py")
    assert p.skill == "Logical Deduction"
    assert p.description == "A reference game with a one-line docstring."
    assert p.hint == ""


def test_skill_from_file_name_read_from_disk(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "game_00001_042_multi_step_workflows.py"
    path.write_text('"""Tool task."""\n', encoding="utf-8")
    p = Program.from_file(path)
    assert (p.skill, p.source) == ("Multi-Step Workflows", str(path))


def test_header_skill_wins_over_the_file_name() -> None:
    code = '"""Desc.\n\nskill: Optimization\n"""\n'
    p = Program.from_code(code, source="game_00012_003_logical_deduction.py")
    assert p.skill == "Optimization"


@pytest.mark.parametrize(
    "name",
    [
        "game_12_3_logical_deduction.txt",
        "gamex_00012_003_logical_deduction.py",
        "logical.py",
        "game_00012_003_Logical-Deduction.py",
    ],
)
def test_non_reference_file_names_give_no_skill(name: str) -> None:
    assert Program.from_code('"""Desc."""\n', source=name).skill == ""


def test_skill_slugs_round_trip() -> None:
    assert skill_slug("Multi-Step Workflows") == "multi_step_workflows"
    assert skill_from_slug("multi_step_workflows") == "Multi-Step Workflows"
    assert skill_from_slug("causal_inference") == "Causal Inference"
    assert skill_from_slug("word_games") == "Word Games"  # unknown slugs are title-cased


# --- identity ---------------------------------------------------------------------------------


def test_env_id_is_stable_under_trailing_whitespace_and_line_endings() -> None:
    base = Program.from_code(HEADER).env_id
    assert len(base) == 64 and int(base, 16) >= 0  # sha256 hex
    variants = [
        HEADER.replace("\n", "\r\n"),
        HEADER.replace("\n", "\r"),
        "\n".join(line + " \t " for line in HEADER.split("\n")),
        HEADER + "\n\n\n",
        "\n\n" + HEADER,
        HEADER.rstrip("\n"),
    ]
    for code in variants:
        assert Program.from_code(code).env_id == base
    assert env_id_of(HEADER) == base


def test_env_id_differs_for_different_code() -> None:
    base = Program.from_code(HEADER).env_id
    assert Program.from_code(HEADER.replace("1-3", "1-4")).env_id != base
    assert Program.from_code(HEADER.replace("    pass", "  pass")).env_id != base  # indentation
    assert Program.from_code(HEADER + "# comment\n").env_id != base


def test_env_id_ignores_metadata() -> None:
    a = Program.from_code(HEADER, source="a.py", hint="x")
    b = Program.from_code(HEADER, source="b.py", hint="y", skill="Optimization")
    assert a.env_id == b.env_id


def test_env_id_of_any_str() -> None:
    assert len(env_id_of("x = '\ud800'\n")) == 64


# --- difficulty levels ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "levels"),
    [
        ("1-3", (1, 2, 3)),
        (" 2 - 4 ", (2, 3, 4)),
        ("0-0", (0,)),
        ("1-11", tuple(range(1, 12))),  # at most 11 levels
        ("1-12", ()),
        ("3-1", ()),
        ("2", ()),
        ("easy-hard", ()),
        ("1-3 (multi)", ()),
    ],
)
def test_difficulty_levels(value: str, levels: tuple[int, ...]) -> None:
    code = f'"""Desc.\n\ndifficulty: {value}\n"""\n'
    assert Program.from_code(code).difficulty_levels() == levels


def test_no_difficulty_declared() -> None:
    assert Program.from_code(HEADER.replace("difficulty: 1-3\n", "")).difficulty_levels() == ()


# --- returns ------------------------------------------------------------------------------------


def episode(rewards: list[float], terminated: bool, truncated: bool = False) -> Episode:
    turns = tuple(
        Turn(
            f"r{i}",
            f"a{i}",
            f"o{i}",
            r,
            terminated and i == len(rewards) - 1,
            truncated and i == len(rewards) - 1,
        )
        for i, r in enumerate(rewards)
    )
    return Episode("id", 0, "first", turns, terminated, truncated)


@pytest.mark.parametrize(
    ("rewards", "terminated", "truncated", "ret"),
    [
        ([0.0, 0.0, 1.0], True, False, 1.0),
        ([0.5, 0.0, 0.25], True, False, 0.25),  # only the last reward counts (outcome only)
        ([1.0, 1.0, 0.0], True, False, 0.0),
        ([0.0, 7.5], True, False, 1.0),  # clipped to [-1, 1]
        ([0.0, -3.0], True, False, -1.0),
        ([-0.5], True, False, -0.5),
        ([0.0, 1.0], False, True, 0.0),  # truncated: 0 whatever the last reward
        ([0.0, -1.0], False, True, 0.0),
        ([0.0, 1.0], False, False, 0.0),  # stopped early: not terminated
        ([], True, False, 0.0),  # no turns
    ],
)
def test_episode_return(
    rewards: list[float], terminated: bool, truncated: bool, ret: float
) -> None:
    ep = episode(rewards, terminated, truncated)
    assert episode_return(ep) == ret == ep.return_
    assert ep.won is (ret > 0)


def test_transcript_is_plain_data() -> None:
    ep = episode([0.0, 1.0], terminated=True)
    assert ep.transcript() == [
        "first",
        ["a0", "o0", 0.0, False, False],
        ["a1", "o1", 1.0, True, False],
    ]
    assert json.loads(json.dumps(ep.transcript())) == ep.transcript()


def test_records_are_frozen_and_verdict_serialises() -> None:
    v = Verdict("abc", False, (CheckFailure("parse", "SyntaxError"),), {"seconds": 0.1})
    assert v.to_json() == {
        "env_id": "abc",
        "admitted": False,
        "failures": [{"check": "parse", "reason": "SyntaxError"}],
        "stats": {"seconds": 0.1},
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.admitted = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Program.from_code(HEADER).code = ""  # type: ignore[misc]
