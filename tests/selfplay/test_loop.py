"""The self-play loop driven by a scripted policy: a full run, resume after SIGKILL, garbage."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spade.envs.pool import Pool
from spade.rewards import INVALID_DESIGN_REWARD
from spade.train import train
from tests.support import loopkit  # tests/ is on sys.path (pytest's rootdir-relative import)
from tests.support.scripted import decode


def _run(run_dir: Path, iterations: int, **overrides: object) -> tuple[dict, loopkit.FakeTrainer]:
    cfg = loopkit.small_config(run_dir, iterations=iterations, **overrides)
    run_dir.mkdir(parents=True, exist_ok=True)
    with Pool(run_dir / "pool.sqlite") as pool:
        loopkit.add_magic(pool)
    models, trainer = loopkit.scripted_models()
    summary = train(cfg, models=models, progress_bars=False, show=lambda s: None)
    return summary, trainer


def _committed(run_dir: Path) -> int:
    try:
        return int(json.loads((run_dir / "state.json").read_text())["iteration"])
    except (FileNotFoundError, ValueError):
        return 0


def _table(run_dir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(run_dir / "pool.sqlite") as db:
        return sorted(db.execute(sql).fetchall())


def test_a_full_run_designs_plays_scores_and_trains(tmp_path: Path) -> None:
    summary, trainer = _run(tmp_path / "run", iterations=2)
    first, second = summary["iterations"]
    # iteration 1 designs (3 attempts), iteration 2 closes the window (regen_interval 2)
    assert 0 <= first["valid_design_rate"] <= 1 and "valid_design_rate" not in second
    assert first["episodes"] > 0 and first["agent_samples"] > 0
    assert "designer_reward" in second and second["designer_samples"] > 0
    attempts = _table(tmp_path / "run", "SELECT admitted, reward FROM design_attempts")
    assert len(attempts) == 3
    for admitted, reward in attempts:  # failed attempts carry the lowest reward at once
        assert admitted or reward == INVALID_DESIGN_REWARD
    # the Agent's even seeds win and odd seeds lose: both kinds of advantage are trained
    agent = [s for update in trainer.updates for s in update if s.role == "agent"]
    assert {s.advantage > 0 for s in agent} == {True, False}
    roles = {s.role for update in trainer.updates for s in update}
    assert roles == {"agent", "designer"}
    assert (tmp_path / "run" / "state.json").exists()
    assert json.loads((tmp_path / "run" / "state.json").read_text())["iteration"] == 2
    for key in ("plain_win_rate", "bands", "mean_turns", "tokens", "overhead", "loss"):
        assert key in second


def test_agent_loss_mask_covers_exactly_its_generated_tokens(tmp_path: Path) -> None:
    _, trainer = _run(tmp_path / "run", iterations=1)
    agent = [s for s in trainer.updates[0] if s.role == "agent"]
    assert agent
    for sample in agent:
        trained = [t for t, m in zip(sample.token_ids, sample.loss_mask) if m]
        reply = decode(trained)
        # the scripted agent's replies, and nothing of the prompt or the observations
        assert reply.startswith(("I think it is \\boxed{", "\\boxed{0}"))
        assert "Seed" not in reply and "<user>" not in reply
        masked = decode([t for t, m in zip(sample.token_ids, sample.loss_mask) if not m])
        assert "Seed" in masked


def test_garbage_designer_output_never_crashes_the_loop(tmp_path: Path, monkeypatch) -> None:
    garbage = [
        "",
        "```python\n" + "x = (" * 5000 + "\n```\nHINT: h",
        "no code at all",
        "```python\nclass A(:\n```\nHINT: x",
        "```python\n" + "#" * 300_000 + "\n```",
    ]
    calls = {"n": 0}

    def designer(messages):
        calls["n"] += 1
        return garbage[calls["n"] % len(garbage)]

    monkeypatch.setattr(loopkit, "designer_reply_for", designer)
    summary, _ = _run(
        tmp_path / "run",
        iterations=2,
        design=loopkit.small_config(tmp_path).design.__class__(
            envs_per_regen=5, regen_interval=1, skills=("Magic Numbers",), active_skills=1
        ),
    )
    assert [m["valid_design_rate"] for m in summary["iterations"]] == [0.0, 0.0]
    rewards = _table(tmp_path / "run", "SELECT reward FROM design_attempts")
    assert rewards == [(INVALID_DESIGN_REWARD,)] * 10


def test_an_iteration_without_any_advantage_skips_the_update(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(loopkit, "agent_reply", lambda messages: "\\boxed{0}")  # always loses
    summary, trainer = _run(tmp_path / "run", iterations=1, no_design=True)
    (metrics,) = summary["iterations"]
    assert metrics["agent_samples"] == 0 and metrics["loss"] == {}
    assert trainer.updates == []


@pytest.mark.slow
def test_kill_at_any_point_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    iterations = 4
    _, ref_trainer = _run(tmp_path / "reference", iterations)
    run_dir = tmp_path / "killed"
    script = Path(loopkit.__file__)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    # kill twice: mid-way through iteration 2 (after iteration 1 committed), then right after
    # a resume has committed iteration 3 (in the middle of the checkpoint sequence or just after)
    for committed, delay in ((1, 0.15), (3, 0.0)):
        resume = (run_dir / "state.json").exists()
        proc = subprocess.Popen(
            [sys.executable, str(script), str(run_dir), str(iterations)]
            + (["resume"] if resume else []),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while _committed(run_dir) < committed and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
        assert _committed(run_dir) < iterations  # the kill really interrupted the run
    models, trainer = loopkit.scripted_models()
    cfg = loopkit.small_config(run_dir, iterations=iterations)
    resume = (run_dir / "state.json").exists()
    if not resume:  # killed before iteration 1 committed: start again from scratch
        for path in (run_dir / "state.json", run_dir / "metrics.jsonl"):
            path.unlink(missing_ok=True)
    summary = train(cfg, resume=resume, models=models, progress_bars=False, show=lambda s: None)
    assert [m["iteration"] for m in summary["iterations"]] == list(range(1, iterations + 1))
    for sql in (
        "SELECT env_id, iteration, seed, hinted, return_ FROM episodes",
        "SELECT iteration, skill, attempt, env_id, admitted, reward FROM design_attempts",
        "SELECT env_id, regen, iteration, reward FROM designer_rewards",
        "SELECT env_id FROM programs",
    ):
        assert _table(run_dir, sql) == _table(tmp_path / "reference", sql), sql
    assert trainer.digest == ref_trainer.digest
