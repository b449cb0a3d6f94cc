"""Evaluation suites (`spade eval --suite`): reasoning-gym items as sandboxed environments, scored
by the suite's own scorer; known answers win, empty, wrong and partly right ones lose."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

pytest.importorskip("reasoning_gym")

from suitekit import SuiteSandbox, module_sandbox

from spade.cli.main import main
from spade.evals.suites import parse_suite, suite_programs, suite_sandbox_config
from spade.evals.suites.rgym import DEFAULT_SUBSETS, EXCLUDED, NO_REFERENCE, datasets
from spade.types import Program

CONFIG = suite_sandbox_config("reasoning-gym")

box = module_sandbox(CONFIG)  # one sandbox, the suite's package preloaded, per module


SUBSETS = "basic_arithmetic,chain_sum,letter_counting,number_sorting,word_sorting,gcd"


@pytest.mark.parametrize("level", [1, 3])
def test_known_answers_win_at_levels_1_and_3(level: int, box: SuiteSandbox) -> None:
    programs = suite_programs(f"reasoning-gym:{SUBSETS}", limit=4, level=level)
    result = box.solutions(programs)
    assert result.errors == 0
    assert result.overall.wins == result.overall.episodes == 24
    assert set(result.by_skill) == {f"reasoning-gym:{s}" for s in SUBSETS.split(",")}


def _rewards(box: SuiteSandbox, program: Program, replies: Sequence[str]) -> list[float]:
    """The reward of one single-turn episode per reply."""
    return box.returns(program, [[r] for r in replies], max_turns=1)


def _answer(box: SuiteSandbox, program: Program) -> str:
    (action,) = box.solution_of(program)
    return str(action)[len("\\boxed{") : -1]


def test_empty_wrong_and_partly_right_replies_lose(box: SuiteSandbox) -> None:
    (program,) = suite_programs("reasoning-gym:word_sorting", limit=1)
    answer = _answer(box, program)
    replies = [
        "",
        "\\boxed{}",
        "no box at all",
        "\\boxed{" + answer[:-1] + "}",  # the scorer gives ~0.9: partial credit is not a win
        "\\boxed{" + answer + "}",
    ]
    assert _rewards(box, program, replies) == [0.0, 0.0, 0.0, 0.0, 1.0]


def test_a_scorer_that_raises_scores_zero(box: SuiteSandbox) -> None:
    # prime_factorization's scorer raises ValueError on a non-integer factor
    (program,) = suite_programs("reasoning-gym:prime_factorization", limit=1)
    assert _rewards(box, program, ["\\boxed{1.5}", "\\boxed{x × y}"]) == [0.0, 0.0]


def test_items_are_deterministic_and_differ_by_seed_and_level(box: SuiteSandbox) -> None:
    a = suite_programs("reasoning-gym:basic_arithmetic", limit=2, level=1, seed=0)
    assert [p.code for p in a] == [
        p.code for p in suite_programs("reasoning-gym:basic_arithmetic", limit=2, level=1)
    ]
    answers = {_answer(box, p) for p in a}
    other_seed = {
        _answer(box, p) for p in suite_programs("reasoning-gym:basic_arithmetic", limit=2, seed=7)
    }
    assert len(answers) == 2 and answers != other_seed
    assert [p.source for p in a] == [
        "reasoning-gym:basic_arithmetic/0",
        "reasoning-gym:basic_arithmetic/1",
    ]


def test_bad_suite_specs_are_refused_with_a_reason() -> None:
    assert parse_suite("reasoning-gym:a, b,") == ("reasoning-gym", ["a", "b"])
    with pytest.raises(ValueError, match="unknown suite 'bfcl-x'"):
        suite_programs("bfcl-x")
    with pytest.raises(ValueError, match="excluded: scores any non-empty answer"):
        suite_programs("reasoning-gym:game_of_life_halting")
    with pytest.raises(ValueError, match="no dataset 'nope'"):
        suite_programs("reasoning-gym:nope")
    with pytest.raises(ValueError, match="at least 1"):
        suite_programs("reasoning-gym", limit=0)
    # reasoning-gym's curricula give invalid configurations at some levels: refused up front
    with pytest.raises(ValueError, match=r"caesar_cipher level 3: .*invalid configuration"):
        suite_programs("reasoning-gym:caesar_cipher", level=3)
    with pytest.raises(ValueError, match="jugs is excluded: some items are unsolvable"):
        suite_programs("reasoning-gym:jugs", level=1)
    with pytest.raises(ValueError, match="no curriculum"):
        suite_programs("reasoning-gym:basic_arithmetic,gsm_symbolic", level=1)
    assert not set(EXCLUDED) & set(datasets())
    assert set(DEFAULT_SUBSETS) <= set(datasets())
    assert len(suite_programs("reasoning-gym", limit=1)) == len(DEFAULT_SUBSETS)


def test_spade_eval_suite_with_the_solution_policy(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--suite", "reasoning-gym:chain_sum,gcd", "--level", "1", "--limit", "3"]
    assert main([*argv, "--policy", "solution", "--seeds", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["overall"]["wins"] == result["overall"]["episodes"] == 6
    assert set(result["by_skill"]) == {"reasoning-gym:chain_sum", "reasoning-gym:gcd"}
    assert main(["eval", "--suite", "reasoning-gym:word_ladder", "--policy", "solution"]) == 2


def test_items_without_a_reference_answer_have_nothing_to_replay(box: SuiteSandbox) -> None:
    # rush_hour's scorer checks a proposed move list; the item has no answer to replay
    assert "rush_hour" in NO_REFERENCE
    result = box.solutions(suite_programs("reasoning-gym:rush_hour", limit=2))
    assert (result.overall.wins, result.overall.episodes, result.errors) == (0, 2, 2)
