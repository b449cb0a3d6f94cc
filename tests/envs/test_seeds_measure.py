"""`spade seeds --measure`: every sandbox session it opens is closed, even when the environment
raises in reset() or solution() (it used to leak the session)."""

from __future__ import annotations

import asyncio

from spade.cli.main import solution_lengths
from spade.sandbox import SandboxError
from spade.types import Program

CODE = '''"""Count to the target.

skill: Mathematical Reasoning
hint: count
difficulty: 1-2
turns: multi
"""


class CountEnv:
    pass
'''


class FakeSession:
    def __init__(self, box: FakeSandbox, seed_fails: dict[int, str]) -> None:
        self.box, self.seed_fails, self.seed = box, seed_fails, -1

    async def reset(self, seed: int) -> None:
        self.seed = seed
        if self.seed_fails.get(seed) == "reset":
            raise SandboxError("exception", "reset raised")

    async def solution(self) -> list[str]:
        if self.seed_fails.get(self.seed) == "solution":
            raise SandboxError("timeout", "solution hung")
        return ["a"] * (self.seed + 1)

    async def close(self) -> None:
        self.box.open_sessions -= 1


class FakeSandbox:
    def __init__(self, seed_fails: dict[int, str]) -> None:
        self.seed_fails, self.open_sessions, self.opened = seed_fails, 0, 0

    async def open(self, code: str, kwargs: dict) -> FakeSession:
        self.open_sessions += 1
        self.opened += 1
        return FakeSession(self, self.seed_fails)


def test_sessions_are_closed_when_reset_or_solution_raises() -> None:
    program = Program.from_code(CODE, source="t")
    assert program.difficulty_levels() == (1, 2)
    for fails, expected in (
        ({}, {1: 3.0, 2: 3.0}),  # lengths 1..5, median 3
        ({2: "reset"}, {1: 1.5, 2: 1.5}),  # seeds 0, 1 measured, then the level stops
        ({0: "solution"}, {}),  # no seed measured at any level
    ):
        box = FakeSandbox(fails)
        got = asyncio.run(solution_lengths(box, [program]))
        assert got == {program.env_id: expected}
        assert box.opened > 0 and box.open_sessions == 0
