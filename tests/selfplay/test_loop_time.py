"""Where a loop iteration's time goes, end to end with the scripted plan
(tests/support/loopplan.py): per-phase seconds, sampling against environment time, the turn and
context limits of a play, and the progress display."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from spade.backends.base import Message, Models
from spade.config import PlayConfig
from spade.prompts import HINT_SYSTEM, designer_reply
from spade.selfplay.loop import TIME_PHASES
from spade.train import train
from tests.support import loopkit
from tests.support.loopplan import (
    PLAN,
    S1,
    S2,
    Designer,
    env,
    metrics_of,
    phase_seconds,
    plan_config,
    rows,
    run,
    system_of,
)
from tests.support.scripted import ScriptedPolicy


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
        if "Environment Designer" in system_of(prompts):
            time.sleep(0.5)
        return sample(prompts, params)

    policy.sample = slow_design  # type: ignore[method-assign]
    trainer = SlowTrainer()
    cfg = plan_config(tmp_path / "run", iterations=2, scale_floor=20.0)
    began = time.perf_counter()
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    wall = time.perf_counter() - began
    first, second = metrics_of(tmp_path / "run")
    assert second["designer_scale"] == 20.0
    assert first["model_seconds"] >= 0.9 and second["model_seconds"] >= 0.4
    assert first["seconds"] + second["seconds"] <= wall
    # by phase: the update's 0.4 s in each iteration, the Designer's 0.5 s in the first only
    assert phase_seconds(first)["update_s"] >= 0.4 and phase_seconds(second)["update_s"] >= 0.4
    assert phase_seconds(first)["designer_sample_s"] >= 0.5
    assert phase_seconds(second)["designer_sample_s"] == 0.0  # no design at iteration 2
    assert phase_seconds(first)["agent_sample_s"] < 0.4  # neither sleep is the Agent's


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
        system = system_of(prompts)
        if "Environment Designer" not in system and system != HINT_SYSTEM:
            agent_params.append(params)
        return sample(prompts, params)

    policy.sample = recording  # type: ignore[method-assign]
    trainer = loopkit.FakeTrainer()
    cfg = plan_config(tmp_path / "run", iterations=2)
    cfg = dataclasses.replace(
        cfg, play=dataclasses.replace(cfg.play, max_tokens=29, temperature=0.7)
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
        system = system_of(prompts)
        if "Environment Designer" in system:
            time.sleep(2.0)
        elif system != HINT_SYSTEM:
            agent_calls.append(len(prompts))
            time.sleep(0.1)
        return sample(prompts, params)

    policy.sample = slow  # type: ignore[method-assign]
    trainer = loopkit.FakeTrainer()
    cfg = plan_config(tmp_path / "run", iterations=1)
    train(cfg, models=Models(policy, trainer, policy, trainer), progress_bars=False, show=print)
    [m] = metrics_of(tmp_path / "run")
    assert agent_calls and m["model_seconds"] >= 2.0 + 0.1 * len(agent_calls)
    assert 0.0 <= m["env_seconds"] and m["model_seconds"] + m["env_seconds"] <= m["seconds"]
    # by phase: each role's sleeps are its own sampling time, and the other's is not
    t = phase_seconds(m)
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
    t = phase_seconds(m)
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
    t = phase_seconds(m)
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
