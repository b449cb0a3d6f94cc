"""The Designer's side of the loop, end to end with the scripted plan (tests/support/loopplan.py):
its prompts (seeded, grounded, showing the pool and the mastered design), its sampling seeds, the
request that follows the design config and the regeneration schedule."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from spade.backends.base import Models
from spade.config import DesignConfig
from spade.prompts import DESIGNER_ROLE_COMPACT, designer_reply
from spade.train import train
from spade.types import env_id_of
from tests.support import loopkit
from tests.support.loopplan import (
    ALPHA,
    DELTA,
    PLAN,
    S1,
    S2,
    Designer,
    env,
    metrics_of,
    rows,
    run,
    system_of,
)
from tests.support.scripted import ScriptedPolicy


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
        if "Environment Designer" in system_of(prompts):
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
        system = system_of(prompts)
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
