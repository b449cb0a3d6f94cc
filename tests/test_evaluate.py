"""`spade.evaluate.summarise`: win rates overall, by skill and by family (source folder)."""

from __future__ import annotations

from types import SimpleNamespace

from spade.evaluate import summarise


def _rollout(source: str, skill: str, won: bool, error: str | None = None):
    program = SimpleNamespace(source=source, skill=skill)
    return SimpleNamespace(
        request=SimpleNamespace(program=program), return_=float(won), error=error
    )


def test_summarise_groups_by_skill_and_by_family_and_shares_add_up() -> None:
    rollouts = [
        _rollout("eval:mini:older/1", "Logical Deduction", True),
        _rollout("eval:mini:older/1", "Logical Deduction", False),
        _rollout("eval:mini-seen:sum/1", "Mathematical Reasoning", True),
        _rollout("eval:mini-seen:sum/1", "Mathematical Reasoning", True),
        _rollout("eval:path_trace/2", "Spatial Reasoning", False, error="boom"),
    ]
    result = summarise(rollouts)
    assert (result.overall.wins, result.overall.episodes, result.errors) == (3, 5, 1)
    assert {k: (v.wins, v.episodes) for k, v in result.by_family.items()} == {
        "eval:mini:older": (1, 2),
        "eval:mini-seen:sum": (2, 2),
        "eval:path_trace": (0, 1),
    }
    held_out = result.share(lambda family: not family.startswith("eval:mini-seen:"))
    assert (held_out.wins, held_out.episodes) == (1, 3)
    assert result.to_json()["by_family"]["eval:mini-seen:sum"]["rate"] == 1.0
