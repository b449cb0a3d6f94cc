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

import dataclasses
import json
import random
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from spade.backends.base import Message, Models
from spade.config import DesignConfig, PlayConfig
from spade.envs.checks import ValidatorConfig
from spade.prompts import DESIGNER_ROLE_COMPACT, HINT_SYSTEM, designer_reply
from spade.rewards import INVALID_DESIGN_REWARD
from spade.selfplay.admission import warm_start_programs
from spade.selfplay.loop import TIME_PHASES
from spade.train import train
from spade.types import env_id_of
from spade.warmstart.data import training_programs
from tests.support import loopkit
from tests.support.scripted import ScriptedPolicy, decode

S1, S2 = "Magic Numbers", "Lucky Numbers"
T0 = random.Random(0).randint(100, 999)  # MagicEnv's target at seed 0: what solution() says


def env(name: str) -> str:
    return loopkit.MAGIC_ENV.replace("MagicEnv", name)


ALPHA, GAMMA, DELTA = env("AlphaEnv"), env("GammaEnv"), env("DeltaEnv")
PLAN = {
    S1: [designer_reply(ALPHA, "The number is in the first line."), "no code here"],
    S2: [
        designer_reply(GAMMA, f"Answer \\boxed{{{T0}}}."),
        designer_reply(DELTA, "Read the first line."),
    ],
}


class Designer:
    """Replies per skill in call order (the loop samples the four prompts in one batch)."""

    def __init__(self, plan: dict[str, list[str]], hint: str = "Read the first line.") -> None:
        self.plan, self.hint = plan, hint
        self.count = dict.fromkeys(plan, 0)
        self.prompts: list[tuple[str, str]] = []  # (system, user) of every Designer call

    def __call__(self, messages: Sequence[Message]) -> str:
        system = str(messages[0].get("content", ""))
        if system == HINT_SYSTEM:  # the separate hint call (paper mode)
            return f"HINT: {self.hint}"
        if "Environment Designer" not in system:
            return loopkit.agent_reply(messages)
        user = str(messages[-1].get("content", ""))
        self.prompts.append((system, user))
        skill = next(s for s in self.plan if s in user)
        replies = self.plan[skill]
        self.count[skill] += 1
        return replies[(self.count[skill] - 1) % len(replies)]


def run(
    run_dir: Path,
    plan: dict[str, list[str]] = PLAN,
    iterations: int = 2,
    designer_reward: str = "blend",
    active_envs: int = 3,
    designer: Designer | None = None,
    negative_weight: float = 1.0,
    plays_per_seed: int = 1,
    **design: object,
) -> tuple[dict, loopkit.FakeTrainer]:
    policy = ScriptedPolicy(designer or Designer(plan))
    trainer = loopkit.FakeTrainer()
    cfg = loopkit.small_config(
        run_dir,
        iterations=iterations,
        designer_reward=designer_reward,
        design=DesignConfig(
            **{  # type: ignore[arg-type]
                "envs_per_regen": 4,
                "regen_interval": 2,
                "skills": (S1, S2),
                "active_skills": 2,
                "grounding": False,
                **design,
            }
        ),
        play=PlayConfig(
            plays_per_env=4,
            active_envs=active_envs,
            max_turns=3,
            negative_weight=negative_weight,
            plays_per_seed=plays_per_seed,
        ),
        # the three designs differ only in their class name: let them all in
        validator=ValidatorConfig(
            probe_seeds=2,
            solution_seeds=1,
            near_duplicate_threshold=1.01,
            copy_seeds=loopkit.NO_COPY,
        ),
    )
    summary = train(
        cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print
    )
    return summary, trainer


def _system(prompts) -> str:
    """The system message of a sampling call's first prompt (a Prompt or a message list)."""
    first = prompts[0].messages if hasattr(prompts[0], "messages") else prompts[0]
    return str(first[0].get("content", ""))


def rows(run_dir: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(run_dir / "pool.sqlite") as db:
        return db.execute(sql, args).fetchall()


def metrics_of(run_dir: Path) -> list[dict]:
    """Every line of the run's metrics.jsonl, parsed (a torn line fails the test)."""
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]


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


def _phases(metrics: dict) -> dict[str, float]:
    """The iteration's per-phase seconds (`spade.selfplay.loop.TIME_PHASES`), every one there."""
    return {k: metrics[f"time/{k}"] for k in TIME_PHASES}


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
    designer = _by_role(trainer, 1, "designer")
    assert [s.advantage for s in designer] == pytest.approx([6.0, -1.2, -6.0, 1.2])
    assert "class ArithmeticEnv" in decode(
        [t for t, m in zip(designer[2].token_ids, designer[2].loss_mask) if m]
    )


def _by_role(trainer: loopkit.FakeTrainer, update: int, role: str) -> list:
    return [s for s in trainer.updates[update] if s.role == role]


def test_agent_z_scores_per_group_and_no_hinted_play_is_trained(blend_run) -> None:
    _, summary, trainer = blend_run
    assert len(trainer.updates) == 2
    for update, metrics in zip(range(2), summary["iterations"]):
        agent = _by_role(trainer, update, "agent")
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
    assert _by_role(trainer, 0, "designer") == []  # the window is still open at iteration 1
    designer = _by_role(trainer, 1, "designer")
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
    designer = _by_role(trainer, 1, "designer")
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
        t = _phases(m)
        assert t["iteration_s"] == m["seconds"]
        assert m["model_seconds"] == pytest.approx(
            t["designer_sample_s"] + t["agent_sample_s"] + t["update_s"]
        )
        assert m["env_seconds"] == pytest.approx(t["validate_s"] + t["env_s"])
    assert _phases(second)["designer_sample_s"] == _phases(second)["validate_s"] == 0.0
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


def _document_part(user: str) -> str:
    """The user prompt after its task line: the grounding document comes first."""
    return user.split("\n\n", 1)[1][:300]


def test_design_prompts_are_seeded_grounded_and_show_the_pool(tmp_path: Path) -> None:
    # two regenerations (iterations 1 and 3) with grounding and the paper's full prompt
    designer = Designer(PLAN)
    run(tmp_path / "a", iterations=3, designer=designer, grounding=True, prompt_budget_chars=None)
    first, second = designer.prompts[:4], designer.prompts[4:]
    assert len(first) == len(second) == 4
    # each regeneration draws its own documents (seeded by iteration): already the first pick
    # differs (a seed shared by all iterations would repeat it)
    assert _document_part(first[0][1]) != _document_part(second[0][1])
    # regeneration 1 shows exemplars from the pool (same skill, win rate 0.5 in [0.15, 0.85])
    assert not any("class AlphaEnv" in u or "class DeltaEnv" in u for _, u in first)
    assert any("class AlphaEnv" in u for _, u in second[::2])  # S1's prompts
    assert any("class GammaEnv" in u or "class DeltaEnv" in u for _, u in second[1::2])
    # the same run again asks for exactly the same
    again = Designer(PLAN)
    run(tmp_path / "b", iterations=3, designer=again, grounding=True, prompt_budget_chars=None)
    assert again.prompts == designer.prompts
    # under the default 1500-character budget the document is cut to fit
    capped = Designer(PLAN)
    run(tmp_path / "c", iterations=1, designer=capped, grounding=True)
    assert all(len(system) + len(user) <= 1500 for system, user in capped.prompts)
    assert max(len(s) + len(u) for s, u in first) > 1500


def test_separate_hint_mode_takes_the_hint_from_its_own_call(tmp_path: Path) -> None:
    code_only = {S1: [f"```python\n{ALPHA}```"], S2: [f"```python\n{DELTA}```", "no code"]}
    designer = Designer(code_only, hint="Look at the first line.")
    run(tmp_path / "run", plan=code_only, iterations=1, designer=designer, separate_hint=True)
    hints = rows(tmp_path / "run", "SELECT env_id, hint FROM programs ORDER BY env_id")
    assert hints == sorted(
        [
            (env_id_of(ALPHA), "Look at the first line."),
            (env_id_of(DELTA), "Look at the first line."),
        ]
    )
    assert all("HINT:" not in user for _, user in designer.prompts)  # code-only format asked


def test_a_mastered_design_is_shown_as_the_negative_example(tmp_path: Path) -> None:
    # EASY shows the Agent an even seed every time: won 8 of 8 plain plays -> win rate 1 > 0.9,
    # "too easy"; the next regeneration's S1 prompts name it as the environment not to repeat
    easy = env("EasyEnv").replace("Seed {self.seed}.", "Seed {self.seed * 2}.")
    plan = {S1: [designer_reply(easy, "Read the first line.")], S2: ["no code here"]}
    designer = Designer(plan)
    run(tmp_path / "run", plan=plan, iterations=3, designer=designer, prompt_budget_chars=None)
    first, second = designer.prompts[:4], designer.prompts[4:]
    negative = "Do not write another environment like this one, which was too easy"
    assert not any(negative in user for _, user in first)
    assert all(negative in user for _, user in second[::2])  # S1's two prompts
    assert not any(negative in user for _, user in second[1::2])  # S2 has no such design


def test_design_sampling_is_seeded_per_iteration(tmp_path: Path) -> None:
    from spade.selfplay.loop import _seed

    seeds: list[int | None] = []
    policy = ScriptedPolicy(Designer(PLAN))
    sample = policy.sample

    def recording(prompts, params):
        if "Environment Designer" in _system(prompts):
            seeds.append(params.seed)
        return sample(prompts, params)

    policy.sample = recording  # type: ignore[method-assign]
    trainer = loopkit.FakeTrainer()
    cfg = loopkit.small_config(
        tmp_path / "run",
        iterations=1,
        design=DesignConfig(envs_per_regen=2, regen_interval=2, skills=(S1, S2), active_skills=2),
    )
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    assert seeds == [_seed(cfg, 1, "design-sample")]


def test_the_design_request_follows_the_design_config(tmp_path: Path) -> None:
    # every Designer call of the iteration: sampled with the config's max_tokens and
    # temperature, asked for the config's difficulty word in its form (compact, not the
    # request's default full contract), with one active skill only for the rotation's first
    # skill; its sampling time is model time
    calls: list[tuple[object, str, str]] = []
    policy = ScriptedPolicy(Designer(PLAN))
    sample = policy.sample

    def recording(prompts, params):
        system = _system(prompts)
        if "Environment Designer" in system:
            time.sleep(0.5)  # the Designer's sampling time must count as model time
            for p in prompts:
                messages = p.messages if hasattr(p, "messages") else p
                calls.append((params, system, str(messages[-1]["content"])))
        return sample(prompts, params)

    policy.sample = recording  # type: ignore[method-assign]
    trainer = loopkit.FakeTrainer()
    design = DesignConfig(
        envs_per_regen=2,
        regen_interval=2,
        skills=(S1, S2),
        active_skills=1,
        max_tokens=777,
        temperature=0.55,
        difficulty_word="fiendish",
        form="compact",
        grounding=False,
    )
    cfg = loopkit.small_config(tmp_path / "run", iterations=1, design=design)
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    assert len(calls) == 2
    for params, system, user in calls:
        assert (params.max_tokens, params.temperature) == (777, 0.55)  # type: ignore[attr-defined]
        assert system.startswith(DESIGNER_ROLE_COMPACT) and "Example:" in system
        assert f"Write a new fiendish environment that trains the skill: {S1}." in user
    [metrics] = metrics_of(tmp_path / "run")
    assert metrics["model_seconds"] >= 0.5  # the scripted Agent itself takes milliseconds


def test_designs_come_every_regen_interval_from_the_first_iteration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # regen_interval 3 over 4 iterations: regenerations at iterations 1 and 4 only
    phases: list[str] = []
    policy = ScriptedPolicy(Designer(PLAN))
    trainer = loopkit.FakeTrainer()
    design = DesignConfig(envs_per_regen=2, regen_interval=3, skills=(S1, S2), active_skills=2)
    cfg = loopkit.small_config(tmp_path / "run", iterations=4, design=design)
    from spade import train as train_module

    class Bar:
        def __init__(self, *args: object) -> None: ...
        def __enter__(self):
            return self

        def __exit__(self, *exc: object) -> None: ...
        def phase(self, name: str) -> None:
            phases.append(name)

        def done(self, metrics: dict) -> None:
            phases.append("|")

    monkeypatch.setattr(train_module, "_Progress", Bar)
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    rows_ = metrics_of(tmp_path / "run")
    assert [m["iteration"] for m in rows_] == [1, 2, 3, 4]
    assert ["design_attempts" in m for m in rows_] == [True, False, False, True]
    # the progress display names each phase of each iteration
    assert "".join(p if p == "|" else p[0] for p in phases) == "dpu|pu|pu|dpu|"


def test_timed_sampling_adds_up_over_calls() -> None:
    from spade.selfplay.loop import _Timed

    class Slow:
        def sample(self, prompts, params):
            time.sleep(0.05)
            return []

    clock = {"other": 1.0}
    timed = _Timed(Slow(), clock, "model_s")  # type: ignore[arg-type]
    for _ in range(3):
        timed.sample([], None)  # type: ignore[arg-type]
    assert clock["model_s"] >= 0.15 and clock["other"] == 1.0


def test_time_totals_add_each_phase_up_and_keep_the_ones_a_caller_added() -> None:
    from spade.selfplay.loop import time_totals

    rows_ = [{"time/update_s": 1.0, "time/eval_s": 2.0, "seconds": 9.0}, {"time/update_s": 0.25}]
    assert time_totals(rows_) == {
        "designer_sample_s": 0.0,
        "validate_s": 0.0,
        "agent_sample_s": 0.0,
        "env_s": 0.0,
        "update_s": 1.25,
        "iteration_s": 0.0,
        "eval_s": 2.0,
    }


def test_phase_seeds_fit_in_31_bits() -> None:
    from spade.selfplay.loop import _seed

    cfg = loopkit.small_config(Path("unused"), iterations=1)
    seeds = [_seed(cfg, it, phase) for it in range(50) for phase in ("design", "episodes")]
    assert all(0 <= s < 2**31 for s in seeds) and max(seeds) > 2**30  # the whole range is used


class SlowTrainer(loopkit.FakeTrainer):
    def update(self, samples):
        time.sleep(0.4)
        return super().update(samples)


def test_the_scale_floor_and_the_clock_reach_the_iteration(tmp_path: Path) -> None:
    # the blend run's closing iteration scales Designer advantages by 6 (see blend_run); a
    # floor of 20 lifts it to 20. Each iteration updates once (0.4 s) and the first also
    # designs (0.5 s): both are model time, inside the iteration's own seconds.
    policy = ScriptedPolicy(Designer(PLAN))
    sample = policy.sample

    def slow_design(prompts, params):
        if "Environment Designer" in _system(prompts):
            time.sleep(0.5)
        return sample(prompts, params)

    policy.sample = slow_design  # type: ignore[method-assign]
    trainer = SlowTrainer()
    design = DesignConfig(
        envs_per_regen=4, regen_interval=2, skills=(S1, S2), active_skills=2, grounding=False
    )
    cfg = loopkit.small_config(
        tmp_path / "run",
        iterations=2,
        design=dataclasses.replace(design, scale_floor=20.0),
        play=PlayConfig(plays_per_env=4, active_envs=3, max_turns=3),
        validator=ValidatorConfig(
            probe_seeds=2,
            solution_seeds=1,
            near_duplicate_threshold=1.01,
            copy_seeds=loopkit.NO_COPY,
        ),
    )
    began = time.perf_counter()
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    wall = time.perf_counter() - began
    first, second = metrics_of(tmp_path / "run")
    assert second["designer_scale"] == 20.0
    assert first["model_seconds"] >= 0.9 and second["model_seconds"] >= 0.4
    assert first["seconds"] + second["seconds"] <= wall
    # by phase: the update's 0.4 s in each iteration, the Designer's 0.5 s in the first only
    assert _phases(first)["update_s"] >= 0.4 and _phases(second)["update_s"] >= 0.4
    assert _phases(first)["designer_sample_s"] >= 0.5
    assert _phases(second)["designer_sample_s"] == 0.0  # no design at iteration 2
    assert _phases(first)["agent_sample_s"] < 0.4  # neither sleep is the Agent's


def test_a_lone_failed_rollout_and_an_empty_band_count_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the iteration's play keeps one rollout, failed in the sandbox: env_errors counts it once,
    # mean_turns is its own turn count; a band table with no environments gives zero shares
    from spade.envs.pool import Pool
    from spade.selfplay import loop

    real_play = loop.play
    kept: list = []

    async def one_failed(*args, **kwargs):
        first = (await real_play(*args, **kwargs))[0]
        kept.append(dataclasses.replace(first, error="environment crashed"))
        return kept[-1:]

    empty = {"frontier": 0, "mastered": 0, "out_of_reach": 0, "total": 0}
    monkeypatch.setattr(loop, "play", one_failed)
    monkeypatch.setattr(Pool, "record_bands", lambda self, it, window=None: dict(empty))
    run(tmp_path / "run", iterations=1)
    [metrics] = metrics_of(tmp_path / "run")
    assert (metrics["episodes"], metrics["env_errors"]) == (1, 1)
    assert metrics["mean_turns"] == len(kept[0].episode.turns) > 0
    assert metrics["band_shares"] == {"frontier": 0.0, "mastered": 0.0, "out_of_reach": 0.0}


def test_plays_are_seeded_per_iteration_and_sampled_as_configured(tmp_path: Path) -> None:
    # iteration i plays seeds _seed(cfg, i, "episodes") + 0..n-1 (hinted plays on the same),
    # and the Agent samples with the play config's max_tokens and temperature, seeded per
    # iteration
    from spade.selfplay.loop import _seed

    agent_params: list = []
    policy = ScriptedPolicy(Designer(PLAN))
    sample = policy.sample

    def recording(prompts, params):
        system = _system(prompts)
        if "Environment Designer" not in system and system != HINT_SYSTEM:
            agent_params.append(params)
        return sample(prompts, params)

    policy.sample = recording  # type: ignore[method-assign]
    trainer = loopkit.FakeTrainer()
    design = DesignConfig(
        envs_per_regen=4, regen_interval=2, skills=(S1, S2), active_skills=2, grounding=False
    )
    play = PlayConfig(plays_per_env=4, active_envs=3, max_turns=3, max_tokens=29, temperature=0.7)
    cfg = loopkit.small_config(
        tmp_path / "run",
        iterations=2,
        design=design,
        play=play,
        validator=ValidatorConfig(
            probe_seeds=2,
            solution_seeds=1,
            near_duplicate_threshold=1.01,
            copy_seeds=loopkit.NO_COPY,
        ),
    )
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    for it in (1, 2):
        seeds = rows(tmp_path / "run", "SELECT DISTINCT seed FROM episodes WHERE iteration = ?", it)
        base = _seed(cfg, it, "episodes")
        assert sorted(s for (s,) in seeds) == [base + i for i in range(4)]
    assert agent_params and {(p.max_tokens, p.temperature) for p in agent_params} == {(29, 0.7)}
    seeds_used = {p.seed for p in agent_params}
    assert seeds_used == {_seed(cfg, 1, "play-sample"), _seed(cfg, 2, "play-sample")}


def test_time_is_split_between_sampling_and_environments(tmp_path: Path) -> None:
    # the Designer's call sleeps 2 s and each Agent call 0.1 s: model time holds all of it;
    # environment time is the rest of the design and play phases, never negative (it would be
    # if play subtracted the Designer's sampling too)
    agent_calls: list[int] = []
    policy = ScriptedPolicy(Designer(PLAN))
    sample = policy.sample

    def slow(prompts, params):
        system = _system(prompts)
        if "Environment Designer" in system:
            time.sleep(2.0)
        elif system != HINT_SYSTEM:
            agent_calls.append(len(prompts))
            time.sleep(0.1)
        return sample(prompts, params)

    policy.sample = slow  # type: ignore[method-assign]
    trainer = loopkit.FakeTrainer()
    design = DesignConfig(
        envs_per_regen=4, regen_interval=2, skills=(S1, S2), active_skills=2, grounding=False
    )
    cfg = loopkit.small_config(
        tmp_path / "run",
        iterations=1,
        design=design,
        play=PlayConfig(plays_per_env=4, active_envs=3, max_turns=3),
        validator=ValidatorConfig(
            probe_seeds=2,
            solution_seeds=1,
            near_duplicate_threshold=1.01,
            copy_seeds=loopkit.NO_COPY,
        ),
    )
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    [m] = metrics_of(tmp_path / "run")
    assert agent_calls and m["model_seconds"] >= 2.0 + 0.1 * len(agent_calls)
    assert 0.0 <= m["env_seconds"] and m["model_seconds"] + m["env_seconds"] <= m["seconds"]
    # by phase: each role's sleeps are its own sampling time, and the other's is not
    t = _phases(m)
    assert t["designer_sample_s"] >= 2.0 and t["agent_sample_s"] >= 0.1 * len(agent_calls)
    assert t["agent_sample_s"] < 2.0 and t["designer_sample_s"] < 2.0 + 0.1 * len(agent_calls)
    # and no second is counted twice: the phases fit in the iteration (the Designer's 2 s in
    # validation too would overflow it)
    assert sum(t[k] for k in TIME_PHASES if k != "iteration_s") <= t["iteration_s"]


LONG_ENV = '''"""Say anything; the game ends at the tenth reply.

skill: Magic Numbers
hint: Keep going.
difficulty: 1-3
turns: multi
"""

import time


class LongEnv:
    def __init__(self, max_turns=20, difficulty=2, pause=0.0):
        self.max_turns = max_turns
        self.pause = pause

    def reset(self, seed=None):
        self.turn = 0
        return "Start. " + "x" * 600, {}

    def step(self, action):
        time.sleep(self.pause)
        self.turn += 1
        return "Again. " + "x" * 600, float(self.turn == 10), self.turn == 10, False, {}

    def solution(self):
        return ["go"] * 10
'''


def _long_run(run_dir: Path, designer_sleep: float = 0.0, pause: float = 0.0, **settings: object):
    """One iteration playing LONG_ENV (the pool's only environment; no design is valid)."""
    from spade.envs.pool import Pool
    from spade.types import Program, Verdict

    run_dir.mkdir(parents=True)
    program = Program.from_code(LONG_ENV.replace("pause=0.0", f"pause={pause}"), source="tests")
    with Pool(run_dir / "pool.sqlite") as pool:
        pool.add_program(program, Verdict(program.env_id, True), 0, {})

    def reply(messages: Sequence[Message]) -> str:
        if "Environment Designer" in str(messages[0].get("content", "")):
            time.sleep(designer_sleep)
            return "no code here"
        return "go"

    trainer = loopkit.FakeTrainer()
    policy = ScriptedPolicy(reply)
    cfg = loopkit.small_config(run_dir, iterations=1, **settings)
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    turns = [t for (t,) in rows(run_dir, "SELECT turns FROM episodes")]
    [m] = metrics_of(run_dir)
    return turns, m


def test_plays_stop_at_max_turns_and_at_the_context_limit(tmp_path: Path) -> None:
    # LONG_ENV ends at the tenth reply; every observation is ~600 bytes, i.e. ~600 tokens of the
    # scripted policy. With room for 100,000 tokens the play's max_turns (3) ends each episode;
    # with the default 2,048 (minus the 32 tokens of a reply) the context ends them sooner than
    # max_turns 8 does
    wide = dataclasses.replace(loopkit.small_config(tmp_path).model, max_context_tokens=100_000)
    turns, _ = _long_run(
        tmp_path / "turns", play=PlayConfig(plays_per_env=2, active_envs=1, max_turns=3), model=wide
    )
    assert turns == [3, 3]
    tokens = rows(tmp_path / "turns", "SELECT tokens FROM episodes")
    assert tokens == [(6,), (6,)]  # the Agent's generated tokens: "go" (2 bytes) in each turn
    turns, _ = _long_run(
        tmp_path / "context", play=PlayConfig(plays_per_env=2, active_envs=1, max_turns=8)
    )
    assert len(turns) == 2 and len(set(turns)) == 1 and 1 <= turns[0] < 8


def test_play_time_is_net_of_its_own_sampling_only(tmp_path: Path) -> None:
    # the Designer's call sleeps 3 s, the one episode's one step 1 s in the sandbox: environment
    # time is at least that second (it would lose the Designer's 3 s if the play phase took all
    # of the iteration's model time as its own sampling)
    turns, m = _long_run(
        tmp_path / "run",
        designer_sleep=3.0,
        pause=1.0,
        play=PlayConfig(plays_per_env=1, active_envs=1, max_turns=1),
    )
    assert turns == [1]
    assert m["model_seconds"] >= 3.0 and m["env_seconds"] >= 1.0
    # by phase: the step's second is play's environment time; the Designer's 3 s are its own
    # sampling, not validation (nothing to validate: the reply holds no code) nor the Agent's
    t = _phases(m)
    assert t["env_s"] >= 1.0 and t["designer_sample_s"] >= 3.0
    assert t["validate_s"] < 1.0 and t["agent_sample_s"] < 1.0


def test_an_iteration_with_nothing_to_play_reports_no_time_and_no_plays(tmp_path: Path) -> None:
    # every design fails and the pool holds no environment of these skills: iteration 2 (no
    # regeneration) plays nothing and samples nothing, so the play phase finds the model clock
    # not started (0.0) and its environment time is its own few microseconds, never negative
    run(tmp_path / "run", plan={S1: ["no code here"], S2: ["no code here"]})
    metrics = metrics_of(tmp_path / "run")
    assert [m["iteration"] for m in metrics] == [1, 2]
    assert rows(tmp_path / "run", "SELECT COUNT(*) FROM episodes") == [(0,)]
    assert metrics[1]["model_seconds"] < 0.5 and 0.0 <= metrics[1]["env_seconds"] < 0.5


def test_the_design_phases_environment_time_counts(tmp_path: Path) -> None:
    # the one design's solution() sleeps 1 s; the design phase calls it at least once (the
    # solution-leak gate's `windows.solutions`), the play phase never: the iteration's
    # environment time holds that second, whichever phase adds to the clock last
    slow = env("SlowEnv").replace(
        "    def solution(self):\n", "    def solution(self):\n        time.sleep(1.0)\n"
    )
    slow = slow.replace('"""\n\n\nclass', '"""\n\nimport time\n\n\nclass', 1)
    run(
        tmp_path / "run",
        plan={S1: [designer_reply(slow, "Read the first line.")]},
        iterations=1,
        active_envs=1,
        envs_per_regen=1,
        skills=(S1,),
        active_skills=1,
    )
    [m] = metrics_of(tmp_path / "run")
    assert m["valid_design_rate"] == 1.0 and m["env_seconds"] >= 1.0
    # by phase: validation (which replays the solution) and the hint gate each wait at least
    # one second; play never calls solution()
    t = _phases(m)
    assert t["validate_s"] >= 2.0 and t["env_s"] < t["validate_s"]


def test_a_run_that_designs_nothing_samples_nothing_and_keeps_clean_clocks(tmp_path: Path) -> None:
    # envs_per_regen 0 (the Agent alone, on whatever the pool holds: here nothing): the design
    # phase makes no attempt, so the Designer never samples and the model clock is never
    # started there; the iteration still closes, with no attempts and no negative time
    run(tmp_path / "run", iterations=1, envs_per_regen=0)
    [m] = metrics_of(tmp_path / "run")
    assert m["design_attempts"] == 0 and m["valid_design_rate"] == 0.0
    assert rows(tmp_path / "run", "SELECT COUNT(*) FROM episodes") == [(0,)]
    assert m["model_seconds"] < 0.5 and 0.0 <= m["env_seconds"] < 0.5


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
        agent = sorted(s.advantage for s in _by_role(trainer, update, "agent"))
        wins = [pytest.approx(1.0, abs=1e-7)] * 6
        assert agent == ([] if weight == 0 else [pytest.approx(-weight, abs=1e-7)] * 6) + wins
        assert summary["iterations"][update]["agent_samples"] == len(agent)
        # the Designer's advantages are as before, up to the paper's scale, which counts the
        # Agent samples (6 instead of 12 at weight 0: min(6 / 4 * 2, 50) = 3 instead of 6)
        ratio = summary["iterations"][update].get("designer_scale", 1.0) / baseline["iterations"][
            update
        ].get("designer_scale", 1.0)
        designer = [s.advantage for s in _by_role(trainer, update, "designer")]
        base = [s.advantage * ratio for s in _by_role(base_trainer, update, "designer")]
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
    assert all(not _by_role(trainer, u, "agent") for u in range(len(trainer.updates)))
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
