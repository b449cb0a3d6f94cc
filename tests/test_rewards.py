"""Rewards and advantages: numbers pinned on tiny inline groups, expected values derived inline."""

from __future__ import annotations

import json
import math
import typing

import pytest

from spade.rewards import (
    DESIGNER_REWARDS,
    INVALID_DESIGN_REWARD,
    DesignerRewardName,
    DesignStats,
    LearningPotential,
    blend_reward,
    designer_advantages,
    designer_scale,
    group_advantages,
    hint_gate,
    make_designer_reward,
    plateau,
    pure_regret_reward,
    regret,
    solution_strings,
    solve_rate_reward,
    win_rate_of,
)


def stats(
    *,
    hinted: tuple[float, ...] = (1.0, 1.0, 0.0, 0.0),
    plain: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0),
    window: tuple[float, ...] = (1.0, 0.0),
    hint_ok: bool = True,
    skill: str = "Optimization",
) -> DesignStats:
    return DesignStats(
        env_id="e" * 64,
        skill=skill,
        regen=0,
        hint="try the corners first",
        hinted_returns=hinted,
        plain_returns=plain,
        window_returns=window,
        hint_ok=hint_ok,
    )


# -- agent ---------------------------------------------------------------------------------------


def test_group_advantages_z_score():
    # mean 0.5, population std 0.5 -> (1 - 0.5) / 0.5 = 1, (0 - 0.5) / 0.5 = -1
    assert group_advantages([1, 0, 0, 1]) == pytest.approx([1, -1, -1, 1])
    # mean 0, population std sqrt((1 + 1 + 0) / 3) = sqrt(2/3) -> +-1 / sqrt(2/3) = +-1.2247
    expected = 1 / math.sqrt(2 / 3)
    assert group_advantages([1, -1, 0]) == pytest.approx([expected, -expected, 0.0])


def test_group_advantages_degenerate_groups():
    assert group_advantages([1, 1, 1]) == [0.0, 0.0, 0.0]
    assert group_advantages([0.1, 0.1, 0.1]) == [0.0, 0.0, 0.0]  # 0.1*3/3 != 0.1 in floats
    assert group_advantages([0.7]) == [0.0]
    assert group_advantages([]) == []


def test_group_advantages_eps_keeps_tiny_spread_finite():
    adv = group_advantages([0.0, 1e-12], eps=1e-8)
    assert all(math.isfinite(a) for a in adv)
    # mean 5e-13, std 5e-13: the eps is added to the std, so the spread stays tiny and signed
    scaled = 5e-13 / (5e-13 + 1e-8)
    assert adv == pytest.approx([-scaled, scaled], rel=1e-9)


# -- regret, plateau, win rate -------------------------------------------------------------------


def test_regret_is_difference_of_means():
    # hinted mean 2/4 = 0.5, plain mean 1/4 = 0.25 -> 0.25
    assert regret([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.25)
    # losses count with their sign: hinted 0, plain (-1 + 1) / 2 = 0 -> 0; hinted 1 vs -1 -> 2
    assert regret([0, 0], [-1, 1]) == 0.0
    assert regret([1], [-1]) == 2.0


@pytest.mark.parametrize(
    ("hinted", "plain", "match"),
    [
        ([1, 0], [1], r"^regret needs paired arms \(same seeds and counts\): 2 hinted vs 1 plain$"),
        ([1], [], r"^regret needs both arms: 1 hinted, 0 plain$"),
        ([], [1], r"^regret needs both arms: 0 hinted, 1 plain$"),
    ],
)
def test_regret_needs_paired_non_empty_arms(hinted, plain, match):
    with pytest.raises(ValueError, match=match):
        regret(hinted, plain)


@pytest.mark.parametrize(
    ("w", "expected"),
    [
        (0.0, 0.0),
        (0.1, 0.0),
        (0.15, 0.0),
        (0.3, 0.6),  # (0.3 - 0.15) / 0.25
        (0.4, 1.0),
        (0.5, 1.0),
        (0.6, 1.0),
        (0.7, 0.6),  # (0.85 - 0.7) / 0.25
        (0.85, 0.0),
        (0.9, 0.0),
        (1.0, 0.0),
    ],
)
def test_plateau(w, expected):
    assert plateau(w) == pytest.approx(expected)


def test_plateau_rejects_nan():
    with pytest.raises(ValueError, match=r"^plateau of NaN$"):
        plateau(float("nan"))


def test_win_rate_is_fraction_of_wins_not_mean_return():
    # returns (1, 0, -1, 1): 2 of 4 won -> 0.5 (the mean return would be 0.25)
    assert win_rate_of([1, 0, -1, 1]) == 0.5
    assert win_rate_of([0.2, -0.5]) == 0.5
    assert win_rate_of([]) == 0.0
    s = stats(window=(1, 0, -1, 1), plain=(0.5, -1, 0, 0))
    assert s.win_rate == 0.5
    assert s.plain_win_rate == 0.25
    assert stats(window=(), hint_ok=False, hinted=()).win_rate == 0.0


def test_design_stats_stores_tuples_and_checks_pairing_when_hint_ok():
    s = DesignStats("e", "Optimization", 1, "h", [1, 0], [0, 0], [1], True)
    assert s.hinted_returns == (1.0, 0.0) and isinstance(s.window_returns, tuple)
    assert s.regret == 0.5
    with pytest.raises(ValueError, match="paired"):
        stats(hinted=(1.0,), plain=(1.0, 0.0), hint_ok=True)
    # no hinted arm is fine when the hint was gated out before it was played
    assert stats(hinted=(), hint_ok=False).hint_ok is False


# -- hint gates ----------------------------------------------------------------------------------


LEAK = "hint contains the solution "


@pytest.mark.parametrize(
    ("hint", "replies", "plain_wr", "reason"),
    [
        ("", [], 0.5, "hint is empty"),
        ("  \n ", [], 0.5, "hint is empty"),
        ("use ```python\nprint(1)```", [], 0.5, "hint contains a code fence"),
        ("The answer is 17 BLUE.", ["\\boxed{17 blue}"], 0.5, LEAK + "'17 blue'"),
        ("say   17\nblue", ["\\boxed{17 blue}"], 0.5, LEAK + "'17 blue'"),
        ("submit \\boxed{yes} now", ["\\boxed{yes}"], 0.5, LEAK + "'\\\\boxed{yes}'"),
        ("It is paris", ["I think <answer>Paris</answer>"], 0.5, LEAK + "'paris'"),
        ("half: \\frac{1}{2}", ["\\boxed{\\frac{1}{2}}"], 0.5, LEAK + "'\\\\frac{1}{2}'"),
        ("a good hint", [], 0.0, "plain win rate 0.000 outside [0.05, 0.95]"),
        ("a good hint", [], 0.96, "plain win rate 0.960 outside [0.05, 0.95]"),
    ],
)
def test_hint_gate_reasons(hint, replies, plain_wr, reason):
    assert hint_gate(hint, replies, plain_wr) == reason


@pytest.mark.parametrize("plain_wr", [0.05, 0.5, 0.95])
def test_hint_gate_passes(plain_wr):
    # one- and two-character answers are not searched: "7" appears in honest hints by chance
    replies = ["\\boxed{7}", "<answer>12</answer>"]
    assert hint_gate("try 7 first, then 12", replies, plain_wr) is None
    assert hint_gate("x" * 600, ["\\boxed{abc}"], plain_wr) is None


def test_hint_gate_order_first_reason_wins():
    assert hint_gate("```", ["```"], 0.0) == "hint contains a code fence"


def test_solution_strings():
    assert solution_strings("go \\boxed{a{b}c} or \\boxed{x} <ANSWER> Up  Left </answer>") == [
        "go \\boxed{a{b}c} or \\boxed{x} <answer> up left </answer>",
        "a{b}c",
        "up left",
    ]
    assert solution_strings("\\boxed{unclosed") == ["\\boxed{unclosed"]
    # every box, the middle ones included; exactly MIN_LEAK_CHARS (3) characters is searched
    three = "\\boxed{aaa} \\boxed{bbb} \\boxed{ccc}"
    assert solution_strings(three)[1:] == ["aaa", "bbb", "ccc"]
    assert hint_gate("then bbb wins", [three], 0.5) == LEAK + "'bbb'"


# -- designer reward variants --------------------------------------------------------------------


def test_blend_reward():
    # regret 0.575 - 0.5 = 0.075 -> regret term clip(0.075 / 0.15) = 0.5; window 1 of 2 won -> w
    # 0.5, plateau 1. r = 0.4 * 0.5 + 0.6 * 1 = 0.8
    s = stats(hinted=(0.575,), plain=(0.5,), window=(1, 0))
    assert blend_reward(s) == pytest.approx(0.4 * 0.5 + 0.6 * 1.0)
    # same numbers, hint gated out: the regret term is 0 -> 0.6
    assert blend_reward(stats(hinted=(0.575,), plain=(0.5,), hint_ok=False)) == pytest.approx(0.6)
    # regret 0.3 saturates the term at 1; window 7 of 10 won -> plateau 0.6 -> 0.4 + 0.36 = 0.76
    s = stats(hinted=(0.8,), plain=(0.5,), window=(1,) * 7 + (0,) * 3)
    assert blend_reward(s) == pytest.approx(0.4 + 0.6 * 0.6)
    # negative regret clips to 0; window all won -> plateau 0 -> 0
    assert blend_reward(stats(hinted=(0.0,), plain=(1.0,), window=(1, 1))) == 0.0


def test_pure_regret_reward():
    assert pure_regret_reward(stats()) == pytest.approx(0.25)  # 0.5 - 0.25
    assert pure_regret_reward(stats(hinted=(0, 0), plain=(1, 0))) == 0.0  # regret -0.5 -> 0
    assert pure_regret_reward(stats(hint_ok=False)) == 0.0


def test_solve_rate_reward_ignores_hint():
    s = stats(window=(1, 0, 0), hint_ok=False)  # w = 1/3 -> (1/3 - 0.15) / 0.25
    assert solve_rate_reward(s) == pytest.approx((1 / 3 - 0.15) / 0.25)
    assert solve_rate_reward(stats(window=(1, 0))) == 1.0


def test_learning_potential_sequence():
    lp = LearningPotential(slow_alpha=0.1)
    # first design of a skill initialises its EMA to its win rate 0.5 -> reward 0
    assert lp(stats(window=(1, 0))) == 0.0
    assert lp.mu_slow("Optimization") == 0.5
    # w = 1: |1 - 0.5| = 0.5; then slow 0.5 + 0.1 * 0.5 = 0.55
    assert lp(stats(window=(1, 1))) == pytest.approx(0.5)
    assert lp.mu_slow("Optimization") == pytest.approx(0.55)
    # w = 0: |0 - 0.55| = 0.55; slow 0.55 - 0.055 = 0.495
    assert lp(stats(window=(0, 0))) == pytest.approx(0.55)
    assert lp.mu_slow("Optimization") == pytest.approx(0.495)
    # skills are independent
    assert lp(stats(window=(1, 1), skill="Causal Inference")) == 0.0
    assert lp.mu_slow("Logical Deduction") is None


def test_learning_potential_state_round_trip_gives_identical_rewards():
    history = [(1, 0), (1, 1), (0, 0, 1), (1, 1, 1, 0)]
    lp = LearningPotential()
    for window in history:
        lp(stats(window=window))
        lp(stats(window=window[::-1] + (0,), skill="Spatial Reasoning"))
    state = json.loads(json.dumps(lp.state_dict()))
    resumed = LearningPotential(slow_alpha=0.9)  # overwritten by the state
    resumed.load_state_dict(state)
    assert resumed.state_dict() == lp.state_dict()
    upcoming = [
        stats(window=(0, 1)),
        stats(window=(1,), skill="Spatial Reasoning"),
        stats(window=(1, 1, 0)),
        stats(window=(0,), skill="Pattern Recognition"),
    ]
    assert [resumed(s) for s in upcoming] == [lp(s) for s in upcoming]


def test_learning_potential_rejects_bad_alphas():
    for alpha in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="slow_alpha"):
            LearningPotential(slow_alpha=alpha)
    assert LearningPotential(slow_alpha=1.0).slow_alpha == 1.0  # the range is closed at 1


def test_learning_potential_loads_a_state_with_the_old_fast_ema():
    lp = LearningPotential()
    lp.load_state_dict(
        {"fast_alpha": 0.5, "slow_alpha": 0.2, "fast": {"A": 1.0}, "slow": {"A": 0.5}}
    )
    assert lp.state_dict() == {"slow_alpha": 0.2, "slow": {"A": 0.5}}


def test_registry_and_factory():
    assert set(DESIGNER_REWARDS) == {"blend", "regret", "solve_rate", "learning_potential"}
    assert make_designer_reward("blend") is blend_reward
    a, b = make_designer_reward("learning_potential"), make_designer_reward("learning_potential")
    assert isinstance(a, LearningPotential) and a is not b
    with pytest.raises(ValueError, match="unknown designer reward 'nope'"):
        make_designer_reward("nope")


def test_invalid_design_reward_is_below_every_variant():
    grid = [
        stats(hinted=h, plain=p, window=w, hint_ok=ok)
        for h in [(-1.0, -1.0), (1.0, 1.0), (1.0, 0.0)]
        for p in [(-1.0, -1.0), (1.0, 1.0), (0.0, 1.0)]
        for w in [(), (-1.0,), (1.0,), (1.0, 0.0)]
        for ok in (True, False)
    ]
    for name in DESIGNER_REWARDS:
        reward = make_designer_reward(name)
        for s in grid:
            assert reward(s) >= 0.0 > INVALID_DESIGN_REWARD, (name, s)


# -- designer advantages -------------------------------------------------------------------------


def test_designer_scale():
    assert designer_scale(64, 8, 4) == 32.0  # 64 / 8 * 4
    assert designer_scale(1000, 8, 4) == 50.0  # 500 capped at 50
    assert designer_scale(1000, 8, 4, cap=100.0) == 100.0
    assert designer_scale(64, 0, 4) == 0.0
    assert designer_scale(400, 8, 1) == 50.0  # exactly the cap
    bad = r"^bad designer_scale inputs: {} agent, {} designer, regen_interval {}, floor {}$"
    for args in ((-1, 8, 4), (64, -1, 4), (64, 8, 0)):
        with pytest.raises(ValueError, match=bad.format(*args, 1.0)):
            designer_scale(*args)
    with pytest.raises(ValueError, match=bad.format(64, 8, 4, -0.5)):
        designer_scale(64, 8, 4, floor=-0.5)


def test_designer_scale_floor():
    # the Agent had no samples: the paper's scale is 0 and the Designer would learn nothing
    assert designer_scale(0, 8, 1, floor=0.0) == 0.0
    assert designer_scale(0, 8, 1) == 1.0  # our default floor
    assert designer_scale(2, 8, 1) == 1.0  # 0.25 lifted to the floor
    assert designer_scale(2, 8, 1, floor=0.1) == 0.25  # above a lower floor: the formula
    assert designer_scale(0, 8, 2, floor=3.0) == 3.0
    assert designer_scale(64, 8, 4, floor=3.0) == 32.0  # the floor never lowers the scale
    assert designer_scale(0, 0, 1, floor=3.0) == 0.0  # no designer samples: nothing to scale


def test_designer_advantages_centre_per_group():
    rewards = [1.0, 0.0, 0.5, INVALID_DESIGN_REWARD, 0.3]
    groups = [("A", 0), ("A", 0), ("B", 0), ("B", 0), ("A", 1)]
    # A/0 mean 0.5 -> (+0.5, -0.5) * 2; B/0 mean (0.5 - 1) / 2 = -0.25 -> (+0.75, -0.75) * 2;
    # A/1 alone -> 0. No std division.
    assert designer_advantages(rewards, groups, scale=2.0) == pytest.approx(
        [1.0, -1.0, 1.5, -1.5, 0.0]
    )
    adv = designer_advantages([0.2, 0.9, 0.4], ["g"] * 3, scale=1.0)
    assert sum(adv) == pytest.approx(0.0)
    assert designer_advantages([], [], scale=3.0) == []
    with pytest.raises(ValueError, match="2 rewards but 1 group keys"):
        designer_advantages([1.0, 0.0], ["g"], scale=1.0)


def test_paired_win_difference_is_hinted_minus_plain_wins_with_an_interval():
    from spade.rewards import paired_win_difference

    assert paired_win_difference([]) is None
    assert paired_win_difference([(1.0, 0.0)]) == {
        "mean": 1.0,
        "low": -1.0,
        "high": 1.0,
        "pairs": 1,
    }
    # wins are returns > 0: a -0.5 loss and a 0 draw are both "no win"
    pairs = [(1.0, 0.0), (1.0, 1.0), (0.0, -0.5), (0.5, 0.0)]
    out = paired_win_difference(pairs)
    assert out is not None and out["mean"] == 0.5 and out["pairs"] == 4
    sd = (4 * 0.25 / 3) ** 0.5  # differences 1, 0, 0, 1 around 0.5
    assert out["low"] == pytest.approx(0.5 - 1.96 * sd / 2)
    assert out["high"] == 1.0  # 0.5 + 1.96 * sd / 2 = 1.07, clipped
    same = paired_win_difference([(1.0, 1.0)] * 5)
    assert same == {"mean": 0.0, "low": 0.0, "high": 0.0, "pairs": 5}
    wide = paired_win_difference([(1.0, 0.0), (0.0, 1.0)])
    assert wide is not None and (wide["low"], wide["high"]) == (-1.0, 1.0)  # clipped


def test_the_reward_names_are_the_registry() -> None:
    assert set(typing.get_args(DesignerRewardName)) == set(DESIGNER_REWARDS)
