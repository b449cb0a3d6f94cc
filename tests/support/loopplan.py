"""The scripted self-play plan the loop value tests share (tests/selfplay/test_loop_values.py,
test_loop_design.py, test_loop_time.py): two skills, a scripted Designer that writes ALPHA, GAMMA,
an invalid reply and DELTA in that order, and `run`, one real training (loop, validator, sandbox,
pool) with the scripted models. The values it leads to are derived in test_loop_values.py's
docstring.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.backends.base import Message, Models
from spade.config import DesignConfig, PlayConfig, TrainConfig
from spade.prompts import HINT_SYSTEM, designer_reply
from spade.selfplay.loop import TIME_PHASES
from spade.train import train
from tests.support import loopkit
from tests.support.scripted import ScriptedPolicy

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


def plan_config(
    run_dir: Path,
    iterations: int = 2,
    designer_reward: str = "blend",
    active_envs: int = 3,
    negative_weight: float = 1.0,
    plays_per_seed: int = 1,
    agent_token_cap: int | None = None,
    train_designer: bool = True,
    **design: object,
) -> TrainConfig:
    """The plan's training config: S1 and S2 designed four at a time every two iterations,
    four plays per environment; `design` overrides `DesignConfig` fields."""
    return loopkit.small_config(
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
            agent_token_cap=agent_token_cap,
        ),
        train_designer=train_designer,
        # the three designs differ only in their class name: let them all in
        validator=loopkit.LOOSE_VALIDATOR,
    )


def run(
    run_dir: Path,
    plan: dict[str, list[str]] = PLAN,
    designer: Designer | None = None,
    **settings: Any,
) -> tuple[dict, loopkit.FakeTrainer]:
    """One training of `plan_config(run_dir, **settings)` with the scripted Designer and Agent."""
    policy = ScriptedPolicy(designer or Designer(plan))
    trainer = loopkit.FakeTrainer()
    summary = train(
        plan_config(run_dir, **settings),
        models=Models(policy, trainer, policy, trainer),
        progress_bars=False,
        show=print,
    )
    return summary, trainer


def system_of(prompts) -> str:
    """The system message of a sampling call's first prompt (a Prompt or a message list)."""
    first = prompts[0].messages if hasattr(prompts[0], "messages") else prompts[0]
    return str(first[0].get("content", ""))


def rows(run_dir: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(run_dir / "pool.sqlite") as db:
        return db.execute(sql, args).fetchall()


def metrics_of(run_dir: Path) -> list[dict]:
    """Every line of the run's metrics.jsonl, parsed (a torn line fails the test)."""
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]


def phase_seconds(metrics: dict) -> dict[str, float]:
    """The iteration's per-phase seconds (`spade.selfplay.loop.TIME_PHASES`), every one there."""
    return {k: metrics[f"time/{k}"] for k in TIME_PHASES}


def by_role(trainer: loopkit.FakeTrainer, update: int, role: str) -> list:
    return [s for s in trainer.updates[update] if s.role == role]
