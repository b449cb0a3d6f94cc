"""GEM's offline games as sandboxed multi-turn environments: known answers win, other play loses,
and GEM's shaped rewards never count as a win."""

from __future__ import annotations

import pytest

pytest.importorskip("gem")

from suitekit import SuiteSandbox, module_sandbox

from spade.evals.suites import suite_programs, suite_sandbox_config
from spade.evals.suites.gem import EXCLUDED, GAMES

CONFIG = suite_sandbox_config("gem")

box = module_sandbox(CONFIG)  # one sandbox, the suite's package preloaded, per module


SOLVABLE = "GuessTheNumber,Mastermind,Sudoku,TowerofHanoi"


@pytest.mark.parametrize("level", [1, 2])
def test_known_answers_win(level: int, box: SuiteSandbox) -> None:
    result = box.solutions(suite_programs(f"gem:{SOLVABLE}", limit=3, level=level), 100)
    assert (result.overall.wins, result.overall.episodes, result.errors) == (12, 12, 0)


@pytest.mark.slow
def test_other_play_loses_in_every_game_without_errors(box: SuiteSandbox) -> None:
    junk = [
        "\\boxed{1}",
        "\\boxed{A B}",
        "\\boxed{reveal 1 1}",
        "\\boxed{up}",
        "no move",
        "\\boxed{1 1 1}",
    ]
    for program in suite_programs("gem", limit=1):
        got = box.returns(program, [junk * 3, [""], ["\\boxed{left}"] * 40], max_turns=100)
        assert got == [0.0, 0.0, 0.0], program.source


def _env(game: str) -> object:
    """The program's environment class built in this process (our own code, for a unit test)."""
    (program,) = suite_programs(f"gem:{game}", limit=1)
    namespace: dict[str, object] = {}
    exec(program.code, namespace)
    return namespace["GemGameEnv"]()  # type: ignore[operator]


def test_shaped_rewards_are_not_wins() -> None:
    env = _env("Game2048")
    env.reset()  # type: ignore[attr-defined]
    # a game-over step that raised the highest tile: positive progress reward, not a win
    env.game.step = lambda action: ("Game over!", 0.4, True, False, {})  # type: ignore[attr-defined]
    env.game._has_won = lambda: False  # type: ignore[attr-defined]
    assert env.step("\\boxed{up}")[1:4] == (0.0, True, False)  # type: ignore[attr-defined]
    env.game._has_won = lambda: True  # type: ignore[attr-defined]
    assert env.step("\\boxed{up}")[1:4] == (1.0, True, False)  # type: ignore[attr-defined]

    env = _env("TowerofHanoi")
    env.reset()  # type: ignore[attr-defined]
    # GEM's own turn cap: terminated and truncated, with a partial reward
    env.game.step = lambda action: ("max turns", 0.67, True, True, {})  # type: ignore[attr-defined]
    assert env.step("\\boxed{A C}")[1:4] == (0.0, True, False)  # type: ignore[attr-defined]
    env.game.step = lambda action: ("moved", 0.1, False, False, {"suffix": "board"})  # type: ignore[attr-defined]
    assert env.step("\\boxed{A C}")[:4] == ("moved\nboard", 0.0, False, False)  # type: ignore[attr-defined]


def test_items_and_refusals() -> None:
    a = suite_programs("gem:Sudoku", limit=2)
    assert [p.source for p in a] == ["gem:Sudoku/0", "gem:Sudoku/1"]
    assert a[0].code != a[1].code and a[0].code == suite_programs("gem:Sudoku", limit=1)[0].code
    assert "-v0-hard" in suite_programs("gem:Sudoku", limit=1, level=2)[0].code
    assert len(suite_programs("gem", limit=1)) == len(GAMES) == 8
    with pytest.raises(ValueError, match="Wordle is excluded: downloads an nltk corpus"):
        suite_programs("gem:Wordle")
    with pytest.raises(ValueError, match="no offline game 'Chess'"):
        suite_programs("gem:Chess")
    with pytest.raises(ValueError, match=r"levels are 1 \(easy\) and 2 \(hard\), got 3"):
        suite_programs("gem", level=3)
    assert set(EXCLUDED) == {"Wordle", "Hangman", "WordSearch", "Crosswords"}


def test_spade_eval_gem(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from spade.cli.main import main

    argv = ["eval", "--suite", "gem:TowerofHanoi,Sokoban", "--limit", "2", "--seeds", "1"]
    assert main([*argv, "--policy", "solution", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["by_skill"]["gem:TowerofHanoi"]["wins"] == 2  # known answers replayed
    assert result["by_skill"]["gem:Sokoban"]["wins"] == 0 and result["errors"] == 2  # none known
    assert main(["eval", "--suite", "gem", "--level", "3"]) == 2
