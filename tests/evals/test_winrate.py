"""`spade.evals.winrate`: win rates overall, by skill and by family (source folder); the paired
comparison (bootstrap interval, McNemar) by value."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from spade.evals.winrate import mcnemar_exact, paired_bootstrap, summarise


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


# --- the paired comparison ------------------------------------------------------------------------


def test_identical_outcomes_differ_by_zero_with_a_zero_interval() -> None:
    outcomes = [True, False, True, True, False]
    paired = paired_bootstrap(outcomes, outcomes)
    assert (paired.difference, paired.low, paired.high) == (0.0, 0.0, 0.0)
    assert (paired.before, paired.after, paired.items) == (0.6, 0.6, 5)
    assert (paired.improved, paired.worsened, paired.p_value) == (0, 0, 1.0)
    assert paired.line("near set") == (
        "near set: 60.0% -> 60.0% (+0.0 points, 95% CI [+0.0, +0.0], paired)"
    )


def test_every_item_improved_gives_one_hundred_points_with_no_spread() -> None:
    paired = paired_bootstrap([False] * 4, [True] * 4)
    assert (paired.difference, paired.low, paired.high) == (1.0, 1.0, 1.0)
    # McNemar: 4 discordant items all one way, 2 * (1/2)^4
    assert paired.p_value == 0.125


def test_two_items_one_improved_give_the_whole_interval_from_0_to_1() -> None:
    # item differences (+1, 0): a resample's mean is 0, 1/2 or 1 with probability 1/4, 1/2, 1/4,
    # so the 2.5% and 97.5% quantiles of 10,000 resample means are 0 and 1
    paired = paired_bootstrap([False, True], [True, True])
    assert (paired.before, paired.after, paired.difference) == (0.5, 1.0, 0.5)
    assert (paired.low, paired.high) == (0.0, 1.0)
    assert paired.line("x") == "x: 50.0% -> 100.0% (+50.0 points, 95% CI [+0.0, +100.0], paired)"


def test_the_interval_matches_the_normal_approximation_on_many_items() -> None:
    # 200 items, 40 improved and none worse: d = 0.2 with standard error
    # sqrt(0.2 * 0.8 / 200) = 0.0283, so about [0.145, 0.255]
    before = [False] * 200
    after = [True] * 40 + [False] * 160
    paired = paired_bootstrap(before, after)
    assert paired.difference == 0.2
    assert abs(paired.low - 0.145) < 0.015 and abs(paired.high - 0.255) < 0.015
    # reproducible: a fixed seed, the same interval every time; another seed, nearly the same
    assert paired_bootstrap(before, after) == paired
    other = paired_bootstrap(before, after, seed=1)
    assert abs(other.low - paired.low) <= 0.01 and abs(other.high - paired.high) <= 0.01
    # the order of the items does not matter beyond the pairing
    assert paired_bootstrap(before[::-1], after[::-1]).difference == 0.2


def test_worse_after_gives_a_negative_difference_and_mcnemar_by_value() -> None:
    before = [True] * 6 + [False] * 4
    after = [False] * 5 + [True] * 1 + [True] * 1 + [False] * 3
    paired = paired_bootstrap(before, after)
    assert (paired.improved, paired.worsened) == (1, 5)
    assert paired.difference == -0.4 and paired.low < paired.difference < paired.high
    assert paired.high <= 0.0
    # two-sided exact: 2 * P(Binomial(6, 1/2) <= 1) = 2 * 7 / 64
    assert mcnemar_exact(1, 5) == mcnemar_exact(5, 1) == 14 / 64
    assert mcnemar_exact(3, 3) == 1.0


def test_paired_outcomes_must_pair_up() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([True], [True, False])
    with pytest.raises(ValueError, match="at least one item"):
        paired_bootstrap([], [])
