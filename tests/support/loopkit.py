"""Scripted models and a small pool for loop tests (also run as a script by the kill test).

The Agent reads the number it is asked for from the observation and answers it on even seeds (or
whenever a hint is shown), so returns vary within a group and hints help: advantages and regret
are non-zero. The Designer's reply is a pure function of its prompt: a held-out environment
(valid), a syntax error, or garbage. Everything is deterministic, so a resumed run must match an
uninterrupted one exactly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from spade.backends.base import Message, Models, Sample
from spade.config import DesignConfig, PlayConfig, TrainConfig
from spade.envs import bundled
from spade.envs.checks import ValidatorConfig
from spade.prompts import designer_reply
from spade.sandbox import SandboxConfig
from spade.types import GAME_SKILLS, Verdict
from tests.support.preload import LIGHT_PRELOAD
from tests.support.scripted import (
    ScriptedPolicy,  # tests/ is on sys.path (pytest, or run as a script)
)

NO_COPY = (0, 0)
"""`ValidatorConfig.copy_seeds` for the loop tests: their scripted Agent wins MAGIC_ENV by reading
the number the question shows, which the copy probes (`answer_leak`) rightly reject; the loop's
tests are about the loop (tests/envs/test_validate.py holds the validator to them)."""

VALIDATOR = ValidatorConfig(
    probe_seeds=1, solution_seeds=1, determinism_seeds=(3,), copy_seeds=NO_COPY
)
"""The validator of the loop tests: every check, on fewer seeds than a real run's (one probe
seed, one solution seed, one seed replayed in the fresh interpreters; the copy probes off, see
`NO_COPY`). Their environments ask for a random three-digit number, which no blind probe hits."""

LOOSE_VALIDATOR = dataclasses.replace(VALIDATOR, near_duplicate_threshold=1.01)
"""`VALIDATOR` that admits near-duplicates: the scripted designs differ only in a class name."""

MAGIC_ENV = '''"""Answer with the number you are given.

skill: Mathematical Reasoning
hint: The number is in the first line.
difficulty: 1-3
turns: single
"""


class MagicEnv:
    def __init__(self, max_turns=4, difficulty=2):
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self.seed = seed or 0
        self.target = random.Random(seed).randint(100, 999)
        return f"Seed {self.seed}. Reply \\\\boxed{{n}} with the number {self.target}.", {}

    def step(self, action):
        m = re.search(r"-?\\d+", action)
        if m and int(m.group()) == self.target:
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, True, False, {}

    def solution(self):
        return [f"\\\\boxed{{{self.target}}}"]
'''


def agent_reply(messages: Sequence[Message]) -> str:
    text = str(messages[-1].get("content", ""))
    number = re.search(r"the number (\d+)", text)
    seed = re.search(r"Seed (\d+)", text)
    if number and seed and (int(seed.group(1)) % 2 == 0 or "HINT:" in text):
        return f"I think it is \\boxed{{{number.group(1)}}}"
    return "\\boxed{0}"


HELDOUT_GAMES = [p for p in bundled.heldout_programs() if p.skill in GAME_SKILLS]


def designer_reply_for(messages: Sequence[Message]) -> str:
    digest = int(hashlib.sha256(json.dumps(list(messages), default=str).encode()).hexdigest(), 16)
    choice = digest % 3
    if choice == 0:
        program = HELDOUT_GAMES[(digest // 3) % len(HELDOUT_GAMES)]
        return designer_reply(program.code, program.hint)
    if choice == 1:
        return "```python\nclass BrokenEnv(:\n    pass\n```\nHINT: none"
    return "I am not sure what to write."


def reply(messages: Sequence[Message]) -> str:
    system = str(messages[0].get("content", "")) if messages else ""
    if "Environment Designer" in system:
        return designer_reply_for(messages)
    return agent_reply(messages)


class FakeTrainer:
    """Records updates; its 'weights' are a hash chain over every sample it was given."""

    def __init__(self) -> None:
        self.digest = "0"
        self.updates: list[list[Sample]] = []

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        if not samples:  # like the local backend
            raise ValueError("update needs at least one sample")
        self.updates.append(list(samples))
        for s in samples:
            payload = json.dumps([s.token_ids, s.loss_mask, s.logprobs, s.advantage, s.role])
            self.digest = hashlib.sha256((self.digest + payload).encode()).hexdigest()
        return {"loss": float(len(samples))}

    def save(self, directory: str | Path) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "fake.json").write_text(json.dumps({"digest": self.digest}))

    def load(self, directory: str | Path) -> None:
        self.digest = json.loads((Path(directory) / "fake.json").read_text())["digest"]


def scripted_models() -> tuple[Models, FakeTrainer]:
    policy = ScriptedPolicy(reply)
    trainer = FakeTrainer()
    return Models(policy, trainer, policy, trainer), trainer


def small_config(run_dir: Path, iterations: int = 4, **overrides: object) -> TrainConfig:
    cfg = TrainConfig(
        run_dir=run_dir,
        iterations=iterations,
        heldout_eval=False,
        eval_suites=(),
        # a skill without bundled seeds: the pool holds only MAGIC_ENV and the designs
        design=DesignConfig(
            envs_per_regen=3,
            regen_interval=2,
            skills=("Magic Numbers",),
            active_skills=1,
            grounding=True,
            prompt_budget_chars=1500,
        ),
        play=PlayConfig(plays_per_env=4, active_envs=3, max_turns=3),
        sandbox=SandboxConfig(warm_workers=2, preload=LIGHT_PRELOAD),
        validator=VALIDATOR,
    )
    return dataclasses.replace(cfg, **overrides)  # type: ignore[arg-type]


def add_magic(pool: object) -> None:
    from spade.types import Program

    program = Program.from_code(MAGIC_ENV, source="tests/magic")
    pool.add_program(program, Verdict(program.env_id, True), 0, {})  # type: ignore[attr-defined]


if __name__ == "__main__":  # the kill test runs a whole training in a subprocess
    from spade.envs.pool import Pool
    from spade.train import train

    run_dir = Path(sys.argv[1])
    cfg = small_config(run_dir, iterations=int(sys.argv[2]))
    resume = len(sys.argv) > 3
    models, _ = scripted_models()
    if not resume:
        run_dir.mkdir(parents=True, exist_ok=True)
        with Pool(run_dir / "pool.sqlite") as pool:
            add_magic(pool)
    train(cfg, resume=resume, models=models, progress_bars=False, show=lambda s: None)
