"""The Designer and Agent paths of the loop, end to end, pinned to values derived by hand.

One regeneration (iteration 1) over two skills, S1 and S2, four attempts in the order
[S1, S2, S1, S2] (SkillRotation round robin), with regen_interval 2 so the window closes at
iteration 2. The scripted Designer writes, per skill, in call order:

    S1 attempt 0: ALPHA, hint "The number is in the first line."          (honest)
    S2 attempt 1: GAMMA, hint "Answer \\boxed{T0}."  T0 = the answer at seed 0 (leaks the solution)
    S1 attempt 2: "no code here"                                           (no program: invalid)
    S2 attempt 3: DELTA, hint "Read the first line."                       (honest)

The scripted Agent (loopkit.agent_reply) wins (return 1) on even seeds or whenever a hint is shown
and loses (return 0) otherwise. Every environment is played on 4 consecutive seeds base..base+3,
so exactly two plain plays win, whatever the base:

    plain arm [1, 0, 1, 0] in some order, mean 0.5, win rate 0.5; hinted arm [1, 1, 1, 1], mean 1
    regret = 1 - 0.5 = 0.5
    window (iterations 1 and 2, 8 plain plays, all three designs are active both times): win rate
        0.5, plateau(0.5) = 1
    hint gate: ALPHA and DELTA pass (non-empty, short, no fence, no solution, plain win rate 0.5
        in [0.05, 0.95]); GAMMA contains the seed-0 solution "\\boxed{T0}" -> no regret term

    blend = 0.4 * clip(regret / 0.15, 0, 1) * hint_ok + 0.6 * plateau(win rate)
        ALPHA = 0.4 * 1 + 0.6 * 1 = 1.0;  GAMMA = 0 + 0.6 = 0.6;  DELTA = 1.0;  invalid = -1.0

    Agent z-scores: each plain group [1, 0, 1, 0] has mean 0.5, population std 0.5:
        (1 - 0.5) / (0.5 + 1e-8) = +1 (to 1e-7), and -1 for the losses; 3 environments x 4 plays
        = 12 Agent samples in each iteration, none from a hinted play.
    scale at iteration 2 = min(N_agent / N_designer * regen_interval, 50) = min(12 / 4 * 2, 50) = 6
    centring per (skill, regen): S1 {ALPHA 1.0, invalid -1.0} mean 0.0; S2 {GAMMA 0.6, DELTA 1.0}
        mean 0.8
    Designer advantages = (r - group mean) * 6:
        ALPHA +6.0, invalid -6.0, GAMMA -1.2, DELTA +1.2
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from spade.prompts import designer_reply
from spade.rewards import INVALID_DESIGN_REWARD
from spade.selfplay.admission import warm_start_programs
from spade.selfplay.loop import TIME_PHASES
from spade.types import env_id_of
from spade.warmstart.data import training_programs
from tests.support import loopkit
from tests.support.loopplan import (
    ALPHA,
    DELTA,
    GAMMA,
    PLAN,
    S1,
    S2,
    T0,
    by_role,
    env,
    phase_seconds,
    rows,
    run,
)
from tests.support.scripted import decode


@pytest.fixture
def blend_run(tmp_path: Path) -> tuple[Path, dict, loopkit.FakeTrainer]:
    # function-scoped on purpose: mutmut maps each function to the tests that ran it, and a
    # module-scoped run would be credited to the first test alone
    run_dir = tmp_path / "run"
    summary, trainer = run(run_dir)
    return run_dir, summary, trainer


def test_design_attempts_and_their_outcomes(blend_run) -> None:
    run_dir, summary, _ = blend_run
    first = summary["iterations"][0]
    assert first["valid_design_rate"] == 0.75 and first["skill_mix"] == {S1: 2, S2: 2}
    got = rows(
        run_dir,
        "SELECT iteration, regen, skill, attempt, env_id, admitted, reward FROM design_attempts"
        " ORDER BY attempt",
    )
    assert got == [
        (1, 0, S1, 0, env_id_of(ALPHA), 1, 1.0),
        (1, 0, S2, 1, env_id_of(GAMMA), 1, pytest.approx(0.6)),
        (1, 0, S1, 2, None, 0, INVALID_DESIGN_REWARD),
        (1, 0, S2, 3, env_id_of(DELTA), 1, 1.0),
    ]
    regens = rows(run_dir, "SELECT DISTINCT regen FROM designer_rewards")
    assert regens == [(0,)]


def test_regret_blend_and_hint_gate_per_design(blend_run) -> None:
    run_dir, summary, _ = blend_run
    got = {
        r[0]: r[1:]
        for r in rows(
            run_dir,
            "SELECT env_id, iteration, reward, regret, win_rate, plain_mean, hinted_mean, hint_ok,"
            " hint_reason FROM designer_rewards",
        )
    }
    assert got == {
        env_id_of(ALPHA): (2, 1.0, 0.5, 0.5, 0.5, 1.0, 1, None),
        env_id_of(GAMMA): (
            2,
            pytest.approx(0.6),
            0.5,
            0.5,
            0.5,
            1.0,
            0,
            f"hint contains the solution '\\\\boxed{{{T0}}}'",
        ),
        env_id_of(DELTA): (2, 1.0, 0.5, 0.5, 0.5, 1.0, 1, None),
    }
    second = summary["iterations"][1]
    assert second["regret"] == 0.5
    assert second["designer_reward"] == pytest.approx((1.0 + 0.6 - 1.0 + 1.0) / 4)
    assert second["designer_scale"] == 6.0


def test_a_copy_of_a_warm_start_program_is_refused_and_gets_no_reward(tmp_path: Path) -> None:
    # S1's second reply is the warm start's first Designer target: refused at admission as a
    # training copy (never run), it is a failed attempt with the failed reward (-1), so the
    # Designer advantages are the blend run's, where that slot held no code at all:
    #   ALPHA +6.0, GAMMA -1.2, copy -6.0, DELTA +1.2
    copy = training_programs(form="compact")[0]
    plan = {S1: [PLAN[S1][0], designer_reply(copy, "Compute it.")], S2: PLAN[S2]}
    summary, trainer = run(tmp_path / "run", plan=plan)
    first = summary["iterations"][0]
    assert first["design/copies"] == 1 and first["valid_design_rate"] == 0.75
    (failures,) = rows(tmp_path / "run", "SELECT failures FROM design_attempts WHERE attempt = 2")
    assert json.loads(failures[0]) == [
        {
            "check": "training_copy",
            "reason": "1.00 token similarity to a warm-start training program",
        }
    ]
    assert rows(tmp_path / "run", "SELECT reward FROM design_attempts WHERE attempt = 2") == [
        (INVALID_DESIGN_REWARD,)
    ]
    assert env_id_of(copy) not in {
        e for (e,) in rows(tmp_path / "run", "SELECT env_id FROM programs")
    }
    designer = by_role(trainer, 1, "designer")
    assert [s.advantage for s in designer] == pytest.approx([6.0, -1.2, -6.0, 1.2])
    assert "class ArithmeticEnv" in decode(
        [t for t, m in zip(designer[2].token_ids, designer[2].loss_mask) if m]
    )


def test_agent_z_scores_per_group_and_no_hinted_play_is_trained(blend_run) -> None:
    _, summary, trainer = blend_run
    assert len(trainer.updates) == 2
    for update, metrics in zip(range(2), summary["iterations"]):
        agent = by_role(trainer, update, "agent")
        assert metrics["agent_samples"] == len(agent) == 12
        for sample in agent:
            text = decode(sample.token_ids)
            assert "HINT:" not in text  # no hinted rollout reaches the trainer
            seed = int(text.split("Seed ")[1].split(".")[0])
            expected = 1.0 if seed % 2 == 0 else -1.0  # even seeds win (see the module doc)
            assert sample.advantage == pytest.approx(expected, abs=1e-7)
        # six wins and six losses: three groups of [1, 0, 1, 0]
        assert sorted(round(s.advantage) for s in agent) == [-1] * 6 + [1] * 6


def test_designer_advantages_are_centred_per_skill_and_regen_and_scaled(blend_run) -> None:
    _, summary, trainer = blend_run
    assert by_role(trainer, 0, "designer") == []  # the window is still open at iteration 1
    designer = by_role(trainer, 1, "designer")
    assert summary["iterations"][1]["designer_samples"] == 4
    # pending samples keep the attempt order: ALPHA, GAMMA, invalid, DELTA
    assert [s.advantage for s in designer] == pytest.approx([6.0, -1.2, -6.0, 1.2])
    replies = [decode([t for t, m in zip(s.token_ids, s.loss_mask) if m]) for s in designer]
    assert "AlphaEnv" in replies[0] and "GammaEnv" in replies[1]
    assert replies[2] == "no code here" and "DeltaEnv" in replies[3]


def test_the_reward_function_named_in_the_config_is_the_one_used(tmp_path: Path) -> None:
    # pure regret: max(0, regret) if the hint passed its gates, else 0
    #   ALPHA 0.5, GAMMA 0.0 (gated), DELTA 0.5, invalid -1
    #   S1 mean (0.5 - 1) / 2 = -0.25 -> ALPHA +0.75 * 6 = 4.5, invalid -4.5
    #   S2 mean 0.25 -> GAMMA -1.5, DELTA +1.5
    summary, trainer = run(tmp_path / "run", designer_reward="regret")
    got = dict(rows(tmp_path / "run", "SELECT env_id, reward FROM designer_rewards"))
    assert got == {env_id_of(ALPHA): 0.5, env_id_of(GAMMA): 0.0, env_id_of(DELTA): 0.5}
    designer = by_role(trainer, 1, "designer")
    assert [s.advantage for s in designer] == pytest.approx([4.5, -1.5, -4.5, 1.5])
    assert summary["iterations"][1]["designer_reward"] == pytest.approx((0.5 + 0 - 1 + 0.5) / 4)


def test_two_identical_designs_in_one_regen_admit_the_first(tmp_path: Path) -> None:
    # S1 writes ALPHA twice: attempt 0 is admitted, attempt 2 is its duplicate (verdicts are
    # matched to attempts by position, not by env_id, so the duplicate cannot overwrite it)
    plan = {S1: [designer_reply(ALPHA, "The number is in the first line.")], S2: PLAN[S2]}
    run(tmp_path / "run", plan=plan, iterations=1)
    got = rows(
        tmp_path / "run",
        "SELECT attempt, env_id, admitted, failures FROM design_attempts WHERE skill = ?"
        " ORDER BY attempt",
        S1,
    )
    assert [(a, e, ok) for a, e, ok, _ in got] == [(0, env_id_of(ALPHA), 1), (2, None, 0)]
    assert [f["check"] for f in json.loads(got[1][3])] == ["duplicate"]
    assert rows(tmp_path / "run", "SELECT count(*) FROM programs")[0][0] == 3


def test_design_max_attempts_retries_the_failed_slot(tmp_path: Path) -> None:
    # S1's second slot fails ("no code here") and is asked again: its third reply, BETA
    beta = env("BetaEnv")
    plan = {S1: [*PLAN[S1], designer_reply(beta, "First line.")], S2: PLAN[S2]}
    summary, _ = run(tmp_path / "run", plan=plan, iterations=1, max_attempts=2)
    got = rows(
        tmp_path / "run",
        "SELECT attempt, skill, env_id, admitted FROM design_attempts ORDER BY attempt",
    )
    assert got == [
        (0, S1, env_id_of(ALPHA), 1),
        (1, S2, env_id_of(GAMMA), 1),
        (2, S1, None, 0),
        (3, S2, env_id_of(DELTA), 1),
        (4, S1, env_id_of(beta), 1),  # the retry
    ]
    first = summary["iterations"][0]
    assert first["design_attempts"] == 5 and first["valid_design_rate"] == 4 / 5
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    assert len(state["pending"]) == 5  # every attempt, retried or not, is a Designer sample


def test_iteration_metrics(blend_run) -> None:
    # iteration 1: 3 new designs x 4 plain + 4 hinted plays = 24 episodes of one turn each; the
    # scripted replies are "I think it is \boxed{NNN}" (25 bytes = 25 tokens) on a win and
    # "\boxed{0}" (9) on a loss: 6 plain wins, 6 plain losses, 12 hinted wins
    #   tokens = 18 * 25 + 6 * 9 = 504; iteration 2 (plain only): 6 * 25 + 6 * 9 = 204
    _, summary, _ = blend_run
    first, second = summary["iterations"]
    assert (first["episodes"], second["episodes"]) == (24, 12)
    assert (first["hinted_episodes"], second["hinted_episodes"]) == (12, 0)
    # the regen-0 window (regen_interval 2) closes at iteration 2: its 4 Designer samples join
    # that update, and iteration 1 trains the Agent alone
    assert first["update_tokens"] == first["agent_update_tokens"] > 0
    assert (first["designer_samples"], second["designer_samples"]) == (0, 4)
    assert second["update_tokens"] > second["agent_update_tokens"] > 0
    assert (first["tokens"], second["tokens"]) == (504, 204)
    assert first["plain_win_rate"] == second["plain_win_rate"] == 0.5
    assert (first["hinted_win_rate"], second["hinted_win_rate"]) == (1.0, None)
    # 12 (hinted, plain) pairs on the same seeds: 6 hinted-win/plain-loss (+1), 6 both won (0)
    regret = first["new_design_regret"]
    assert regret["pairs"] == 12 and regret["mean"] == 0.5
    assert regret["low"] == pytest.approx(0.5 - 1.96 * (3 / 11) ** 0.5 / 12**0.5)
    assert second["new_design_regret"] is None  # nothing new designed at iteration 2
    assert first["band_shares"] == {"frontier": 1.0, "mastered": 0.0, "out_of_reach": 0.0}
    assert first["mean_turns"] == second["mean_turns"] == 1.0
    assert first["env_errors"] == second["env_errors"] == 0
    assert (first["design_attempts"], first["solution_errors"]) == (4, 0)
    assert "design_attempts" not in second  # no regeneration at iteration 2
    # all three designs are won half the time: the frontier band (0.2 <= w <= 0.8)
    for m in (first, second):
        assert m["bands"]["frontier"] == 3 and m["bands"]["mastered"] == 0
        assert m["bands"]["out_of_reach"] == 0
        assert set(m["loss"]) == {"shared"}
        assert m["agent_samples"] == 12
        # the time split: sampling + environments never exceed the whole
        assert m["model_seconds"] > 0 and m["env_seconds"] > 0
        assert m["model_seconds"] + m["env_seconds"] <= m["seconds"] + 1e-6
        assert m["overhead"] == pytest.approx(
            (m["seconds"] - m["model_seconds"] - m["env_seconds"]) / m["seconds"]
        )
        # ... and they are the sums of the per-phase seconds, which the iteration holds
        t = phase_seconds(m)
        assert t["iteration_s"] == m["seconds"]
        assert m["model_seconds"] == pytest.approx(
            t["designer_sample_s"] + t["agent_sample_s"] + t["update_s"]
        )
        assert m["env_seconds"] == pytest.approx(t["validate_s"] + t["env_s"])
    assert phase_seconds(second)["designer_sample_s"] == phase_seconds(second)["validate_s"] == 0.0
    assert first["loss"]["shared"] == {"loss": 12.0}  # FakeTrainer: the number of samples
    assert second["loss"]["shared"] == {"loss": 16.0}  # 12 Agent + 4 Designer
    # the summary adds each phase up over the iterations
    assert {k: summary["time"][k] for k in TIME_PHASES} == {
        k: pytest.approx(first[f"time/{k}"] + second[f"time/{k}"], abs=1e-3) for k in TIME_PHASES
    }
    # novelty: no design copies a warm-start program; each admitted one is the same distance
    # from the nearest (the three differ by their class name only, and none is a template)
    assert first["design/copies"] == 0 and "design/copies" not in second
    nearest = warm_start_programs("compact").nearest(ALPHA)
    assert 0.0 < nearest < 0.5
    assert first["design/novelty_mean"] == pytest.approx(1.0 - nearest)


def test_the_active_set_is_new_designs_then_a_seeded_sample(tmp_path: Path) -> None:
    # active_envs 2. Iteration 1: all 3 new designs are played (new ones first, even past the
    # cap), plain and hinted: 24 episodes. Iterations 2 and 3 (iteration 3 redesigns, but the
    # script repeats and every design is a duplicate): 2 of the 3 pool environments, 8 episodes
    summary, _ = run(tmp_path / "run", iterations=3, active_envs=2)
    assert [m["episodes"] for m in summary["iterations"]] == [24, 8, 8]
    assert summary["iterations"][2]["valid_design_rate"] == 0.0
    played = rows(
        tmp_path / "run",
        "SELECT iteration, COUNT(DISTINCT env_id), SUM(hinted) FROM episodes GROUP BY iteration",
    )
    assert played == [(1, 3, 12), (2, 2, 0), (3, 2, 0)]


def test_a_scale_cap_of_one_leaves_the_designer_advantages_unscaled(tmp_path: Path) -> None:
    # the blend run's closing iteration scales by 6 (see blend_run); a cap of 1 (the tiny
    # recipe's, whose loss is normalised per role) trains the centred rewards as they are: the
    # same Designer advantages divided by 6
    scaled, scaled_trainer = run(tmp_path / "scaled")
    capped, capped_trainer = run(tmp_path / "capped", scale_cap=1.0)
    assert scaled["iterations"][1]["designer_scale"] == 6.0
    assert capped["iterations"][1]["designer_scale"] == 1.0

    def designer(trainer: loopkit.FakeTrainer) -> list[float]:
        return [s.advantage for u in trainer.updates for s in u if s.role == "designer"]

    a, b = designer(scaled_trainer), designer(capped_trainer)
    assert a and [x / 6 for x in a] == pytest.approx(b)


@pytest.mark.parametrize("weight", [0.0, 0.25])
def test_negative_weight_scales_only_the_agents_losses(tmp_path: Path, weight: float) -> None:
    # every plain group is [1, 0, 1, 0] (z-scores +1 / -1, see the module doc): the wins keep +1,
    # the losses get -weight, and at 0 they are not trained at all (a zero advantage carries
    # nothing); the Designer's samples are untouched
    summary, trainer = run(tmp_path / "w", negative_weight=weight)
    baseline, base_trainer = run(tmp_path / "base")
    for update in range(2):
        agent = sorted(s.advantage for s in by_role(trainer, update, "agent"))
        wins = [pytest.approx(1.0, abs=1e-7)] * 6
        assert agent == ([] if weight == 0 else [pytest.approx(-weight, abs=1e-7)] * 6) + wins
        assert summary["iterations"][update]["agent_samples"] == len(agent)
        # the Designer's advantages are as before, up to the paper's scale, which counts the
        # Agent samples (6 instead of 12 at weight 0: min(6 / 4 * 2, 50) = 3 instead of 6)
        ratio = summary["iterations"][update].get("designer_scale", 1.0) / baseline["iterations"][
            update
        ].get("designer_scale", 1.0)
        designer = [s.advantage for s in by_role(trainer, update, "designer")]
        base = [s.advantage * ratio for s in by_role(base_trainer, update, "designer")]
        assert designer == pytest.approx(base)
    assert summary["iterations"][1]["designer_scale"] == (3.0 if weight == 0 else 6.0)


def test_plays_per_seed_groups_the_agents_advantages_by_seed(tmp_path: Path) -> None:
    # 4 plays, 2 per seed: seeds base, base, base+1, base+1. The scripted Agent's return depends
    # only on the seed (it wins the even ones), so each (environment, seed) group ties and
    # carries nothing: no Agent sample at all, where one group per environment gave 12. Every
    # play is still stored (2 plays of each seed, `play` 0 and 1), and the hinted arm is paired
    # with the plain one play by play.
    summary, trainer = run(tmp_path / "k2", plays_per_seed=2)
    assert [m["agent_samples"] for m in summary["iterations"]] == [0, 0]
    assert all(not by_role(trainer, u, "agent") for u in range(len(trainer.updates)))
    with sqlite3.connect(tmp_path / "k2" / "pool.sqlite") as conn:
        rows = conn.execute(
            "SELECT env_id, iteration, hinted, seed, play FROM episodes ORDER BY 1, 2, 3, 4, 5"
        ).fetchall()
    conn.close()
    groups: dict[tuple, list[tuple[int, int]]] = {}
    for env_id, iteration, hinted, seed, play in rows:
        groups.setdefault((env_id, iteration, hinted), []).append((seed, play))
    assert groups and all(len(v) == 4 for v in groups.values())
    for plays in groups.values():
        base = plays[0][0]
        assert plays == [(base, 0), (base, 1), (base + 1, 0), (base + 1, 1)]
    # regret pairs: 4 per new design (2 seeds x 2 plays), hinted wins all, plain wins the even seed
    regret = summary["iterations"][0]["new_design_regret"]
    assert regret["pairs"] == 4 * 3 and regret["mean"] == pytest.approx(0.5)
