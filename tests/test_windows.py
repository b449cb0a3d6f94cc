"""spade.windows.solutions: the solution strings for the hint gate. An environment failing in the
sandbox just has none (counted); any other exception is a bug and must not silently turn the
solution-leak gate off."""

from __future__ import annotations

import asyncio

import loopkit
import pytest

from spade.sandbox import SandboxError
from spade.types import Program
from spade.windows import solutions

A = Program.from_code(loopkit.MAGIC_ENV, source="a")
B = Program.from_code(loopkit.MAGIC_ENV.replace("MagicEnv", "OtherEnv"), source="b")


class Session:
    def __init__(self, box: Box, code: str) -> None:
        self.box, self.code = box, code

    async def reset(self, seed: int) -> None:
        assert seed == 0

    async def solution(self):
        outcome = self.box.outcomes[self.code]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def close(self) -> None:
        self.box.live -= 1


class Box:
    """A sandbox stand-in: per program code, what solution() gives (or raises); a SandboxError
    whose message mentions "load" is raised by open() instead."""

    def __init__(self, outcomes: dict) -> None:
        self.outcomes, self.live = outcomes, 0

    async def open(self, code: str) -> Session:
        outcome = self.outcomes[code]
        if isinstance(outcome, SandboxError) and "load" in str(outcome):
            raise outcome
        self.live += 1
        return Session(self, code)


def test_solutions_are_strings_and_sandbox_failures_are_counted() -> None:
    box = Box({A.code: ["\\boxed{1}", 2], B.code: SandboxError("timeout", "solution hung")})
    got, errors = asyncio.run(solutions(box, [A, B]))
    assert got == {A.env_id: ["\\boxed{1}", "2"]} and errors == 1
    assert box.live == 0  # every session closed
    box = Box({A.code: "\\boxed{7}", B.code: SandboxError("crashed", "load failed")})
    assert asyncio.run(solutions(box, [A, B])) == ({A.env_id: ["\\boxed{7}"]}, 1)


def test_a_bug_is_not_swallowed() -> None:
    box = Box({A.code: AttributeError("'Session' object has no attribute 'solutoin'")})
    with pytest.raises(AttributeError):
        asyncio.run(solutions(box, [A]))
    assert box.live == 0
