"""spade.selfplay.windows.solutions: the solution strings for the hint gate. An environment failing
in the sandbox just has none (counted); any other exception is a bug and must not silently turn
the solution-leak gate off."""

from __future__ import annotations

import asyncio

import pytest

from spade.sandbox import SandboxError
from spade.selfplay.windows import solutions
from spade.types import Program
from tests.support import loopkit

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


def test_every_failure_counts_and_a_failed_load_does_not_stop_the_rest() -> None:
    C = Program.from_code(loopkit.MAGIC_ENV.replace("MagicEnv", "ThirdEnv"), source="c")
    D = Program.from_code(loopkit.MAGIC_ENV.replace("MagicEnv", "FourthEnv"), source="d")
    load = SandboxError("crashed", "load failed")
    # two programs that do not load, then one that does: both failures counted, the third read
    box = Box({A.code: load, B.code: load, C.code: "\\boxed{3}"})
    assert asyncio.run(solutions(box, [A, B, C])) == ({C.env_id: ["\\boxed{3}"]}, 2)
    # two whose solution() fails in the sandbox
    hung = SandboxError("timeout", "solution hung")
    box = Box({A.code: hung, B.code: hung, C.code: "x", D.code: list(range(150))})
    got, errors = asyncio.run(solutions(box, [A, B, C, D]))
    assert errors == 2 and got[C.env_id] == ["x"]
    assert got[D.env_id] == [str(i) for i in range(100)]  # at most 100 replies kept


def test_a_bug_is_not_swallowed() -> None:
    box = Box({A.code: AttributeError("'Session' object has no attribute 'solutoin'")})
    with pytest.raises(AttributeError):
        asyncio.run(solutions(box, [A]))
    assert box.live == 0


# --- close_windows on a real pool, with a recording reward -----------------------------------

from pathlib import Path  # noqa: E402

from spade.envs.pool import EpisodeRow, Pool  # noqa: E402
from spade.rewards import DesignStats  # noqa: E402
from spade.selfplay.windows import UNPLAYED, close_windows  # noqa: E402
from spade.types import Verdict  # noqa: E402


def _item(program: Program | None, iteration: int, skill: str = "S", regen: int = 0) -> dict:
    return {
        "iteration": iteration,
        "regen": regen,
        "skill": skill,
        "env_id": program.env_id if program else None,
        "hint": "look closely",
        "solution": ["\\boxed{42}"],
        "token_ids": [1, 2, 3],
        "loss_mask": [0, 1, 1],
        "logprobs": [0.0, -0.5, -0.5],
        "temperature": 0.7,
    }


def _play(pool: Pool, program: Program, iteration: int, returns: list[float], hinted=False):
    pool.record_episodes(
        EpisodeRow(program.env_id, iteration, seed, hinted, r, 1) for seed, r in enumerate(returns)
    )


def test_close_windows_passes_the_design_and_its_window_to_the_reward(tmp_path: Path) -> None:
    seen: list[DesignStats] = []

    def reward(stats: DesignStats) -> float:
        seen.append(stats)
        return 0.25

    with Pool(tmp_path / "pool.sqlite") as pool:
        for p in (A, B):
            pool.add_program(p, Verdict(p.env_id, True), 3, {})
        _play(pool, A, 2, [1.0, 1.0])  # before the design iteration (a stand-in): not in it
        _play(pool, A, 3, [1.0, 0.0, 0.0, 0.0])
        _play(pool, A, 3, [1.0, 1.0, 1.0, 0.0], hinted=True)
        _play(pool, A, 4, [1.0, 1.0, 0.0, 0.0])
        _play(pool, A, 5, [1.0, 1.0, 1.0, 1.0])  # after the window closed: not in it
        pending = [_item(A, 3, skill="S", regen=7), _item(B, 3), _item(None, 3), _item(A, 4)]
        still, samples, metrics = close_windows(4, 2, pool, pending, reward, n_agent=6)
        assert still == [pending[3]]  # designed at 4: its window closes at 5
        a, b = seen
        assert (a.env_id, a.skill, a.regen, a.hint) == (A.env_id, "S", 7, "look closely")
        assert a.hinted_returns == (1.0, 1.0, 1.0, 0.0) and a.plain_returns == (1.0, 0.0, 0.0, 0.0)
        assert a.window_returns == (1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0)
        assert a.hint_ok  # plain win rate 0.25, and the hint holds no solution string
        assert b.plain_returns == () and not b.hint_ok  # B was never played
        cur = pool._conn.execute("SELECT * FROM designer_rewards")
        rows = {r["env_id"]: dict(r) for r in cur.fetchall()}
        assert rows[B.env_id]["hint_reason"] == UNPLAYED and rows[B.env_id]["regret"] is None
        assert rows[A.env_id]["hint_reason"] is None and rows[A.env_id]["regret"] == 0.5
        assert rows[A.env_id]["win_rate"] == 3 / 8
    # rewards 0.25, 0.25, -1 in groups (S, 7), (S, 0), (S, 0); scale min(6 / 3 * 2, 50) = 4
    assert metrics == {
        "designer_reward": (0.25 + 0.25 - 1) / 3,
        "regret": 0.5,
        "designer_scale": 4.0,
    }
    # (S, 7) alone: advantage 0, dropped; (S, 0): mean -0.375 -> B +2.5, the invalid one -2.5
    assert [s.advantage for s in samples] == [2.5, -2.5]
    assert samples[0].temperature == 0.7 and samples[0].token_ids == (1, 2, 3)
    assert samples[0].loss_mask == (0, 1, 1) and samples[0].logprobs == (0.0, -0.5, -0.5)
    assert {s.role for s in samples} == {"designer"}


def test_nothing_closes_before_the_end_of_the_window(tmp_path: Path) -> None:
    with Pool(tmp_path / "pool.sqlite") as pool:
        pending = [_item(None, 3)]
        assert close_windows(4, 3, pool, pending, lambda s: 0.0, n_agent=1) == (pending, [], {})
        still, samples, metrics = close_windows(5, 3, pool, pending, lambda s: 0.0, n_agent=1)
        assert still == [] and samples == [] and metrics["designer_reward"] == -1.0
        assert metrics["regret"] is None


def test_designer_learns_while_the_agent_has_no_samples(tmp_path: Path) -> None:
    """The scale floor: with no Agent samples the paper's scale is 0 and nothing is trained;
    with the floor a valid and an invalid design in one group still give two samples."""
    with Pool(tmp_path / "pool.sqlite") as pool:
        pool.add_program(A, Verdict(A.env_id, True), 3, {})
        pending = [_item(A, 3), _item(None, 3)]
        _, samples, metrics = close_windows(3, 1, pool, pending, lambda s: 0.5, n_agent=0)
        assert metrics["designer_scale"] == 1.0
        assert [s.advantage for s in samples] == [0.75, -0.75]  # rewards 0.5 and -1, mean -0.25
        _, none, paper = close_windows(3, 1, pool, pending, lambda s: 0.5, 0, scale_floor=0.0)
        assert paper["designer_scale"] == 0.0 and none == []
