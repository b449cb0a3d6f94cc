"""What the export tests share: the programs they play (a bundled seed, a compact design, as the
Designer writes them, and a program that writes a marker file wherever it runs, so a test can tell
the programs ran in the sandbox, not in the test process) and their known answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from spade.exports.host import EnvHost

COMPACT = '''"""Add two numbers.

skill: Mathematical Reasoning
"""


class AddEnv(QuestionEnv):
    def generate(self, rng):
        a, b = rng.randint(2, 50), rng.randint(2, 50)
        return f"What is {a} + {b}? Give your final answer as \\\\boxed{answer}.", a + b
'''.replace("\\\\boxed{answer}", "\\\\boxed{{answer}}")

MARKER = '''"""Reply with the number shown; writes a marker file wherever it runs.

skill: Mathematical Reasoning
"""
import random

try:
    with open(MARKER_PATH, "w") as f:
        f.write("ran here")
    WROTE = "written"
except OSError:
    WROTE = "blocked"


class MarkerEnv:
    def __init__(self, max_turns=3):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(10, 99)
        return "Reply with " + self.answer() + " (marker " + WROTE + ").", {}

    def answer(self):
        return "\\\\boxed{" + str(self.n) + "}"

    def step(self, action):
        won = action.strip() == self.answer()
        return ("Right." if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return [self.answer()]
'''

WRONG = "\\boxed{-98765}"


def solution_of(bundle_dir: Path, task: int, seed: int) -> list[str]:
    """The winning replies of environment `task` at `seed`, asked of the program in our sandbox."""

    async def ask() -> list[str]:
        host = EnvHost(bundle_dir)
        try:
            episode = await host.open(host.bundle.envs[task])
            await episode.reset(seed)
            replies = await episode.solution()
            await episode.close()
        finally:
            await host.aclose()
        assert replies, f"environment {task} has no solution"
        return replies

    return asyncio.run(ask())
