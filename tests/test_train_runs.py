"""Whole `train()` runs, scripted: held-out evaluation, --separate-designer, the learning-potential
reward across a resume, and a report built from the directory the run wrote."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from spade.backends.base import Models, Prompt
from spade.config import DesignConfig, PlayConfig
from spade.envs.pool import Pool
from spade.evals import before_after
from spade.prompts import designer_reply
from spade.train import train
from spade.types import Program, env_id_of
from tests.support import loopkit
from tests.support import loopplan as values
from tests.support.scripted import ScriptedPolicy, decode

MAGIC = Program.from_code(loopkit.MAGIC_ENV, source="tests/magic")


def _magic_run(run_dir: Path, models: Models, **overrides: object) -> dict:
    cfg = loopkit.small_config(run_dir, **overrides)
    run_dir.mkdir(parents=True, exist_ok=True)
    with Pool(run_dir / "pool.sqlite") as pool:
        loopkit.add_magic(pool)
    return train(cfg, models=models, progress_bars=False, show=lambda s: None)


def test_heldout_evaluation_before_and_after_is_written_once(tmp_path: Path, monkeypatch) -> None:
    # the held-out set is MAGIC alone, on eval seeds 0 and 1: the scripted Agent wins seed 0
    # (even) and loses seed 1, so each evaluation is 1 win in 2 episodes
    monkeypatch.setattr(before_after, "heldout_for", lambda cfg: [MAGIC])
    models, _ = loopkit.scripted_models()
    summary = _magic_run(
        tmp_path / "run", models, iterations=1, no_design=True, heldout_eval=True, eval_seeds=2
    )
    evals = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert summary["eval"] == evals and set(evals) == {"before", "after"}
    for phase in ("before", "after"):
        overall = evals[phase]["overall"]
        assert (overall["wins"], overall["episodes"], overall["rate"]) == (1, 2, 0.5)
        assert set(evals[phase]["by_skill"]) == {"Mathematical Reasoning"}
        (family,) = evals[phase]["by_family"].values()
        assert (family["wins"], family["episodes"]) == (1, 2)
        assert evals[phase]["errors"] == 0
    # a resumed, finished run does not evaluate again
    calls = []
    monkeypatch.setattr(before_after, "heldout_for", lambda cfg: calls.append(1) or [MAGIC])
    train(
        loopkit.small_config(tmp_path / "run"),
        resume=True,
        models=loopkit.scripted_models()[0],
        progress_bars=False,
        show=lambda s: None,
    )
    assert calls == []


def test_the_heldout_set_follows_the_setting() -> None:
    from spade.config import TrainConfig
    from spade.envs import bundled
    from spade.types import GAME_SKILLS, TOOL_SKILLS

    def skills(*names: str) -> set[str]:
        cfg = TrainConfig(design=DesignConfig(skills=names), eval_set="bundled")
        return {p.skill for p in before_after.heldout_for(cfg)}

    everything = {p.skill for p in bundled.heldout_programs()}
    assert skills(GAME_SKILLS[0]) == everything & set(GAME_SKILLS) != set()
    assert skills(TOOL_SKILLS[0]) == everything & set(TOOL_SKILLS) != set()
    assert skills(GAME_SKILLS[0], TOOL_SKILLS[0]) == everything
    assert skills("Magic Numbers") == set()
    from spade.evals.sets import eval_programs

    families = before_after.heldout_for(TrainConfig())  # the default: held-out template families
    assert [p.code for p in families] == [p.code for p in eval_programs()]
    assert {p.skill for p in families} == set(GAME_SKILLS)


def test_separate_designer_trains_each_role_on_its_own_samples(tmp_path: Path) -> None:
    agent_policy, designer_policy = ScriptedPolicy(loopkit.reply), ScriptedPolicy(loopkit.reply)
    agent_trainer, designer_trainer = loopkit.FakeTrainer(), loopkit.FakeTrainer()
    models = Models(agent_policy, agent_trainer, designer_policy, designer_trainer)
    summary = _magic_run(tmp_path / "run", models, iterations=2, separate_designer=True)
    assert {s.role for u in agent_trainer.updates for s in u} == {"agent"}
    assert {s.role for u in designer_trainer.updates for s in u} == {"designer"}
    assert set(summary["iterations"][1]["loss"]) == {"agent", "designer"}
    # the Designer policy wrote the designs (one batch of 3), the Agent policy played them
    assert designer_policy.calls == [3] and sum(agent_policy.calls) > 0
    for update in designer_trainer.updates:
        for s in update:
            assert "Environment Designer" in decode(s.token_ids)
    ckpt = (
        tmp_path / "run" / json.loads((tmp_path / "run" / "state.json").read_text())["checkpoint"]
    )
    assert (ckpt / "agent" / "fake.json").exists() and (ckpt / "designer" / "fake.json").exists()
    # a resume loads each role's own state
    fresh = Models(agent_policy, loopkit.FakeTrainer(), designer_policy, loopkit.FakeTrainer())
    from spade.selfplay.rundir import restore

    with Pool(tmp_path / "run" / "pool.sqlite") as pool:
        restore(tmp_path / "run", fresh, pool)
    assert fresh.agent_trainer.digest == agent_trainer.digest  # type: ignore[attr-defined]
    assert fresh.designer_trainer.digest == designer_trainer.digest  # type: ignore[attr-defined]
    assert agent_trainer.digest != designer_trainer.digest


# --- the learning-potential reward across a resume ----------------------------------------------


def _shown_seed(expression: str, name: str) -> str:
    return values.env(name).replace("Seed {self.seed}.", "Seed {" + expression + "}.")


# The Agent wins when the seed it is shown is even (or it sees a hint): HALF shows the seed
# (2 of 4 consecutive seeds win), ALL shows 2 * seed (always even), NONE 2 * seed + 1 (never).
HALF, ALL = values.env("HalfEnv"), _shown_seed("self.seed * 2", "AllEnv")
NONE, HALF2 = _shown_seed("self.seed * 2 + 1", "NoneEnv"), values.env("HalfTwoEnv")
LP_PLAN = {
    values.S1: [designer_reply(code, "Read the first line.") for code in (HALF, ALL, NONE, HALF2)],
    values.S2: ["no code here"],
}
# Learning potential, slow alpha 0.05, all four designs of skill S1 (S2's attempts are invalid):
#   regen 0 (closes at iteration 2): HALF w 0.5 -> first of its skill: mu = 0.5, reward 0
#                                     ALL  w 1.0 -> |1 - 0.5| = 0.5; mu = 0.5 + 0.05 * 0.5 = 0.525
#   regen 1 (closes at iteration 4): NONE w 0.0 -> |0 - 0.525| = 0.525; mu = 0.525 * 0.95 = 0.49875
#                                     HALF2 w 0.5 -> |0.5 - 0.49875| = 0.00125
LP_REWARDS = {HALF: 0.0, ALL: 0.5, NONE: 0.525, HALF2: 0.00125}


class _Stop(Exception):
    pass


class _FailOnDesignCall:
    """Raise on the n-th Designer batch (a crash in the middle of an iteration)."""

    def __init__(self, policy: ScriptedPolicy, n: int) -> None:
        self.policy, self.n, self.design_calls = policy, n, 0

    def sample(self, prompts, params):
        first = Prompt.of(prompts[0]).messages if prompts else ()
        if first and "Environment Designer" in str(first[0].get("content", "")):
            self.design_calls += 1
            if self.design_calls == self.n:
                raise _Stop
        return self.policy.sample(prompts, params)

    def extend(self, prompt, completion, messages):
        return self.policy.extend(prompt, completion, messages)


def _lp_config(run_dir: Path):
    return loopkit.small_config(
        run_dir,
        iterations=4,
        designer_reward="learning_potential",
        design=DesignConfig(
            envs_per_regen=4,
            regen_interval=2,
            skills=(values.S1, values.S2),
            active_skills=2,
            grounding=False,
        ),
        play=PlayConfig(plays_per_env=4, active_envs=4, max_turns=3),
        validator=loopkit.LOOSE_VALIDATOR,
    )


def _lp_rewards(run_dir: Path) -> dict[str, float]:
    with sqlite3.connect(run_dir / "pool.sqlite") as db:
        return dict(db.execute("SELECT env_id, reward FROM designer_rewards").fetchall())


def test_learning_potential_continues_across_a_resume(tmp_path: Path) -> None:
    expected = {env_id_of(code): r for code, r in LP_REWARDS.items()}
    # uninterrupted
    policy, trainer = ScriptedPolicy(values.Designer(LP_PLAN)), loopkit.FakeTrainer()
    train(
        _lp_config(tmp_path / "a"),
        models=Models(policy, trainer, policy, trainer),
        progress_bars=False,
        show=lambda s: None,
    )
    assert _lp_rewards(tmp_path / "a") == pytest.approx(expected)
    # crashed in iteration 3 (the second regeneration), then resumed with fresh objects: the
    # reward's EMA comes back from state.json
    designer = values.Designer(LP_PLAN)
    crashing = _FailOnDesignCall(ScriptedPolicy(designer), n=2)
    first = loopkit.FakeTrainer()
    with pytest.raises(_Stop):
        train(
            _lp_config(tmp_path / "b"),
            models=Models(crashing, first, crashing, first),  # type: ignore[arg-type]
            progress_bars=False,
            show=lambda s: None,
        )
    state = json.loads((tmp_path / "b" / "state.json").read_text())
    assert state["iteration"] == 2
    assert state["reward_state"]["slow"] == {values.S1: pytest.approx(0.525)}
    resumed_designer = values.Designer(LP_PLAN)
    resumed_designer.count = dict(designer.count)  # the Designer's own position in its script
    policy, second = ScriptedPolicy(resumed_designer), loopkit.FakeTrainer()
    second.load(tmp_path / "b" / state["checkpoint"] / "agent")
    train(
        _lp_config(tmp_path / "b"),
        resume=True,
        models=Models(policy, second, policy, second),
        progress_bars=False,
        show=lambda s: None,
    )
    assert _lp_rewards(tmp_path / "b") == pytest.approx(expected)
    assert second.digest == trainer.digest


# --- a report from a directory train() wrote ----------------------------------------------------


def test_report_of_a_real_run_directory(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from spade.report.html import build_report
    from spade.report.rundata import load_run

    run_dir = tmp_path / "run"
    values.run(run_dir)  # the pinned two-iteration run (tests/selfplay/test_loop_values.py)
    run = load_run(run_dir)
    assert run.finished and [m["iteration"] for m in run.metrics] == [1, 2]
    assert run.skipped_lines == 0
    assert {r["env_id"]: r["reward"] for r in run.rewards} == pytest.approx(
        {env_id_of(values.ALPHA): 1.0, env_id_of(values.GAMMA): 0.6, env_id_of(values.DELTA): 1.0}
    )
    assert len(run.attempts) == 4 and sum(e["admitted"] for e in run.envs) == 3
    page = build_report(run_dir).read_text()
    assert "2 / 2" in page  # iterations card
    # the top-by-regret table lists the three designs, each with its regret 0.5 and reward
    for code in (values.ALPHA, values.GAMMA, values.DELTA):
        assert env_id_of(code)[:12] in page
    assert page.count("<td class=num>0.50</td><td class=num>1.00</td>") == 2  # ALPHA, DELTA
    assert page.count("<td class=num>0.50</td><td class=num>0.60</td>") == 1  # GAMMA
    assert page.count("gated out") == 1 and page.count("passed gates") == 2


def test_suites_are_evaluated_before_and_after_and_resumed_per_suite(
    tmp_path: Path, monkeypatch
) -> None:
    # A scripted Agent that writes HumanEval/0's reference solution and fails HumanEval/1:
    # with 2 items x 2 eval seeds, each phase is 2 wins in 4 episodes. A suite whose package is
    # missing is skipped with the reason, and the run goes on.
    human_eval = pytest.importorskip("spade.evals.suites.humaneval")
    first = human_eval.items()[0]

    def reply(messages: list) -> str:
        if first["prompt"] in messages[-1]["content"]:
            return "```python\n" + first["prompt"] + first["canonical_solution"] + "```"
        return "```python\nreturn None\n```"

    from spade.evals import suites

    monkeypatch.setitem(suites.SUITES, "nosuchsuite", suites.Suite("rgym", "no_such_package"))
    agent = ScriptedPolicy(reply)
    scripted, trainer = loopkit.scripted_models()
    models = Models(agent, trainer, scripted.designer, scripted.designer_trainer)
    specs = ("humaneval", "nosuchsuite")
    overrides = dict(no_design=True, heldout_eval=True, eval_suites=specs, eval_suite_limit=2)
    monkeypatch.setattr(before_after, "heldout_for", lambda cfg: [MAGIC])
    summary = _magic_run(tmp_path / "run", models, iterations=1, **overrides)
    evals = json.loads((tmp_path / "run" / "eval.json").read_text())
    assert summary["eval"] == evals and set(evals["suites"]) == {"before", "after"}
    for phase in ("before", "after"):
        result = evals["suites"][phase]["humaneval"]
        assert (result["overall"]["wins"], result["overall"]["episodes"]) == (2, 4)
        assert "needs its package" in evals["suites"][phase]["nosuchsuite"]["skipped"]

    # a run killed after the "before" suites resumes without evaluating them again
    del evals["suites"]["after"]
    (tmp_path / "run" / "eval.json").write_text(json.dumps(evals))
    asked: list[str] = []
    real = before_after._suite
    monkeypatch.setattr(
        before_after, "_suite", lambda m, c, spec: asked.append(spec) or real(m, c, spec)
    )
    train(
        loopkit.small_config(tmp_path / "run"),
        resume=True,
        models=models,
        progress_bars=False,
        show=lambda s: None,
    )
    assert asked == list(specs)
    assert set(json.loads((tmp_path / "run" / "eval.json").read_text())["suites"]) == {
        "before",
        "after",
    }


def test_bad_suite_specs_stop_a_run_before_it_starts(tmp_path: Path) -> None:
    from spade.cli.main import main

    run = str(tmp_path / "run")
    assert main(["train", "--run-dir", run, "--eval-suites", "nosuch:thing"]) == 2
    assert main(["train", "--run-dir", run, "--eval-suites", "gem@easy"]) == 2
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="unknown suite"):
        train(loopkit.small_config(tmp_path / "run", eval_suites=("nosuch",)))


def test_every_recipe_names_suites_that_exist() -> None:
    from spade.config import RECIPES
    from spade.evals.suites import suite_programs

    for recipe in RECIPES.values():
        # a recipe evaluates on a public suite: its own, or the paired far set's reasoning-gym
        assert recipe.eval_suites or recipe.eval_set == "paired"
        for spec in recipe.eval_suites:
            name, level = before_after.split_suite_spec(spec)
            if name.startswith("reasoning-gym"):  # the default's: built as the run builds it
                assert suite_programs(name, limit=2, level=level)


def test_a_tracked_run_mirrors_every_metrics_row(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    models, _ = loopkit.scripted_models()
    _magic_run(tmp_path / "run", models, iterations=2, log=("tensorboard",))
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("plain_win_rate")] == [
        (r["iteration"], pytest.approx(r["plain_win_rate"])) for r in rows
    ]
    assert "config/text_summary" in events.Tags()["tensors"]  # the config, as text
