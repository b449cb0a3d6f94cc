"""The pool on SQLite: idempotent writes, selection rules, bands, resume without duplicates,
reopening from disk, and surviving a process killed mid-transaction (the schema and its
migration: test_pool_schema.py)."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spade.envs.pool import EpisodeRow, Pool
from spade.types import CheckFailure, Episode, Program, Turn, Verdict

ROOT = Path(__file__).resolve().parents[2]
SKILL = "Logical Deduction"
OTHER = "Optimization"


def prog(name: str, skill: str = SKILL, hint: str = "think") -> Program:
    code = f'"""Env {name}."""\n\nclass {name.title()}Env:\n    pass\n'
    return Program.from_code(code, source=f"design:{name}", hint=hint, skill=skill)


def add(pool: Pool, name: str, iteration: int = 0, skill: str = SKILL, admitted: bool = True):
    p = prog(name, skill)
    assert pool.add_program(p, Verdict(p.env_id, admitted), iteration, {"attempt": 0})
    return p


def latest_iteration(pool: Pool) -> int | None:
    """The highest iteration anything was recorded at (None for an empty pool)."""
    tables = {
        "programs": "created_iteration",
        "design_attempts": "iteration",
        "episodes": "iteration",
        "designer_rewards": "iteration",
        "bands": "iteration",
    }
    union = " UNION ALL ".join(f"SELECT MAX({c}) AS it FROM {t}" for t, c in tables.items())
    return pool._conn.execute(f"SELECT MAX(it) FROM ({union})").fetchone()[0]


def play(pool: Pool, p: Program, wins: int, losses: int, iteration: int = 0, hinted=False):
    """wins plays with return 1, then losses with return 0 (or -1 every other one)."""
    returns = [1.0] * wins + [0.0 if i % 2 else -1.0 for i in range(losses)]
    rows = [
        EpisodeRow(p.env_id, iteration, seed, hinted, r, 3, 10) for seed, r in enumerate(returns)
    ]
    return pool.record_episodes(rows)


@pytest.fixture
def pool():
    with Pool(":memory:") as p:
        yield p


# -- programs, idempotency ---------------------------------------------------------------


def test_plays_of_one_seed_are_kept_apart_and_paired_play_by_play(pool):
    p = add(pool, "a")
    rows = [
        EpisodeRow(p.env_id, 3, 7, hinted, r, 1, play=i)
        for hinted, returns in ((False, [1.0, 0.0, 0.0]), (True, [1.0, 1.0, 0.0]))
        for i, r in enumerate(returns)
    ]
    assert pool.record_episodes(rows) == 6
    assert pool.plain_record() == {p.env_id: (1, 3)}
    assert pool.paired_returns(p.env_id, 3) == ([1.0, 1.0, 0.0], [1.0, 0.0, 0.0])


def test_add_program_round_trip_and_idempotent(pool):
    p = prog("a")
    verdict = Verdict(p.env_id, True, stats={"probe_win_rate": 0.0})
    prov = {"exemplars": ["x" * 64], "grounding": "Tides", "regen": 2, "attempt": 3}
    assert pool.add_program(p, verdict, 8, prov) is True
    assert pool.add_program(p, verdict, 9, {}) is False  # duplicate env_id: no second row
    assert pool.counts()["programs"] == 1
    assert pool.program(p.env_id) == p and p.env_id in pool
    [row] = pool.export_rows()
    assert row["provenance"] == prov and row["created_iteration"] == 8
    assert row["verdict"] == json.loads(json.dumps(verdict.to_json()))
    with pytest.raises(ValueError, match="verdict is for"):
        pool.add_program(prog("b"), verdict, 8, {})


def test_admitted(pool):
    a = add(pool, "a", iteration=0)
    b = add(pool, "b", iteration=0, skill=OTHER)
    add(pool, "rejected", iteration=1, admitted=False)
    c = add(pool, "c", iteration=4)
    d = add(pool, "d", iteration=4)
    assert pool.admitted() == [a, b, c, d]  # insertion order, rejected left out
    assert pool.admitted(skill=SKILL) == [a, c, d]


def test_record_episodes_idempotent(pool):
    p = add(pool, "a")
    assert play(pool, p, wins=2, losses=2) == 4
    assert play(pool, p, wins=2, losses=2) == 0  # same (env, iteration, seed, hinted)
    assert play(pool, p, wins=2, losses=2, hinted=True) == 4  # the hinted arm is its own key
    assert pool.record_episodes([{**vars(EpisodeRow(p.env_id, 0, 9, False, 1.0, 1))}]) == 1
    mapping = {"env_id": p.env_id, "iteration": 0, "seed": 10, "hinted": 0, "return": -1.0}
    assert pool.record_episodes([{**mapping, "turns": 2}]) == 1
    assert pool.counts()["episodes"] == 10
    with pytest.raises(sqlite3.IntegrityError):  # episodes must belong to a stored program
        pool.record_episodes([EpisodeRow("f" * 64, 0, 0, False, 1.0, 1)])
    assert pool.counts()["episodes"] == 10


def test_episode_row_of_episode():
    turn = Turn("r", "\\boxed{1}", "ok", 1.0, True, False)
    ep = Episode("e" * 64, 5, "obs", (turn, turn), terminated=True, truncated=False)
    assert EpisodeRow.of(ep, iteration=2, hinted=True, tokens=7) == EpisodeRow(
        "e" * 64, 2, 5, True, 1.0, 2, 7
    )
    with pytest.raises(ValueError, match="seeded"):
        EpisodeRow.of(Episode("e", None, "o", (), True, False), iteration=0, hinted=False)


def test_returns_and_paired_returns(pool):
    p = add(pool, "a")
    # iteration 0: returns 1, 1, -1, 0 -> 2 of 4 won; iteration 1: 1 win, 3 losses
    play(pool, p, wins=2, losses=2, iteration=0)
    play(pool, p, wins=1, losses=3, iteration=1)
    play(pool, p, wins=4, losses=0, iteration=1, hinted=True)
    assert pool.returns(p.env_id, until_iteration=0) == [1.0, 1.0, -1.0, 0.0]
    assert pool.returns(p.env_id, hinted=True) == [1.0] * 4
    assert pool.returns(p.env_id, since_iteration=2) == []
    assert pool.returns(prog("never").env_id) == []
    assert pool.returns(p.env_id, since_iteration=1) == [1.0, -1.0, 0.0, -1.0]
    assert pool.paired_returns(p.env_id, 1) == ([1.0] * 4, [1.0, -1.0, 0.0, -1.0])
    assert pool.paired_returns(p.env_id, 0) == ([], [])  # no hinted arm at iteration 0


def test_attempts_and_designer_rewards(pool):
    p = add(pool, "a", iteration=4)
    fail = CheckFailure("determinism", "seed 3 differs")
    assert pool.record_attempt(4, 1, SKILL, 0, failures=[fail, "no code block"], reward=-1.0)
    assert pool.record_attempt(4, 1, SKILL, 1, env_id=p.env_id, admitted=True)
    assert not pool.record_attempt(4, 1, SKILL, 1, env_id=p.env_id, admitted=True)
    with pytest.raises(ValueError, match="env_id"):
        pool.record_attempt(4, 1, SKILL, 2, admitted=True)
    kw = dict(win_rate=0.5, regret=0.2, plain_mean=0.25, hinted_mean=0.45, hint_ok=True)
    assert pool.record_designer_reward(p.env_id, 1, 8, 0.93, **kw)
    assert not pool.record_designer_reward(p.env_id, 1, 8, 0.0, **kw)  # already scored
    first, second = pool.attempts(4)
    assert first["failures"] == [
        {"check": "determinism", "reason": "seed 3 differs"},
        {"check": "design", "reason": "no code block"},
    ]
    assert (first["reward"], first["reward_iteration"]) == (-1.0, 4)
    assert (second["reward"], second["reward_iteration"]) == (0.93, 8)  # set by the reward
    assert latest_iteration(pool) == 8


# -- memory and selection ------------------------------------------------------------------------


def scored(pool: Pool, name: str, wins: int, losses: int, regret, *, skill=SKILL, hint_ok=True):
    p = add(pool, name, skill=skill)
    play(pool, p, wins, losses)
    if regret is not None:
        pool.record_designer_reward(
            p.env_id, 0, 0, 0.5, win_rate=0.0, regret=regret, hint_ok=hint_ok
        )
    return p


def test_memory(pool):
    old = scored(pool, "old", 1, 1, 0.1)
    pool.record_designer_reward(old.env_id, 1, 4, 0.5, win_rate=0.5, regret=0.3, hint_ok=True)
    pool.record_designer_reward(old.env_id, 2, 8, 0.5, win_rate=0.5, regret=0.9, hint_ok=False)
    gated = scored(pool, "gated", 1, 1, 0.8, hint_ok=False)
    unplayed = add(pool, "unplayed", iteration=1)
    add(pool, "rejected", iteration=1, admitted=False)
    entries = pool.memory()
    assert [e.program for e in entries] == [unplayed, gated, old]
    assert (entries[0].win_rate, entries[0].plays, entries[0].regret) == (None, 0, None)
    assert (entries[1].win_rate, entries[1].regret) == (0.5, None)  # gated regret never counts
    assert entries[2].regret == 0.3  # latest regret whose hint passed the gates
    assert entries[2].program.code == old.code  # whole code, not a prefix
    assert [e.program for e in pool.memory(limit=1)] == [unplayed]


def test_exemplars_rules(pool):
    # 12 candidates in range with regrets 0.01 .. 0.12; win rate 3/20 = 0.15 and 17/20 = 0.85
    # sit on the closed range's edges
    ranked = []
    for i in range(12):
        wins = (3, 17, 10)[i % 3]
        ranked.append(scored(pool, f"c{i}", wins, 20 - wins, regret=(i + 1) / 100))
    top10 = {p.env_id for p in ranked[2:]}
    scored(pool, "easy", 18, 2, regret=0.9)  # win rate 0.9: out of range
    scored(pool, "hard", 2, 18, regret=0.9)  # 0.1: out of range
    scored(pool, "other", 1, 1, regret=0.9, skill=OTHER)
    scored(pool, "password", 1, 1, regret=2.0, hint_ok=False)  # gated: ranks as no regret
    add(pool, "unplayed")
    seen = set()
    for seed in range(200):
        chosen = pool.exemplars(SKILL, random.Random(seed), k=2)
        assert len(chosen) == 2 and chosen[0].env_id != chosen[1].env_id
        seen |= {e.env_id for e in chosen}
    assert seen == top10
    a = pool.exemplars(SKILL, random.Random(7), k=3)
    b = pool.exemplars(SKILL, random.Random(7), k=3)
    assert [e.env_id for e in a] == [e.env_id for e in b]
    assert len(pool.exemplars("Causal Inference", random.Random(0))) == 0


def test_exemplars_fall_back_to_envs_without_regret(pool):
    seed_env = scored(pool, "seed", 1, 1, regret=None)
    chosen = pool.exemplars(SKILL, random.Random(0), k=2)
    assert [e.program for e in chosen] == [seed_env]


def test_exemplars_other_skill_in_range(pool):
    p = scored(pool, "o", 1, 1, regret=0.1, skill=OTHER)
    assert [e.program for e in pool.exemplars(OTHER, random.Random(0))] == [p]


def test_negative_example(pool):
    assert pool.negative_example(SKILL, random.Random(0)) is None
    scored(pool, "mid", 1, 1, None)
    scored(pool, "edge_easy", 18, 2, None)  # exactly 0.9: not > 0.9
    scored(pool, "edge_hard", 2, 18, None)  # exactly 0.1: not < 0.1
    scored(pool, "other", 0, 4, None, skill=OTHER)
    assert pool.negative_example(SKILL, random.Random(0)) is None
    easy = scored(pool, "easy", 19, 1, None)
    hard = scored(pool, "hard", 1, 19, None)
    found = set()
    for s in range(50):
        negative = pool.negative_example(SKILL, random.Random(s))
        assert negative is not None
        found.add((negative[0].env_id, negative[1]))
    assert found == {(easy.env_id, "too easy"), (hard.env_id, "too hard")}
    assert pool.negative_example(SKILL, random.Random(3)) == pool.negative_example(
        SKILL, random.Random(3)
    )


def test_bands(pool):
    for name, wins in [("w10", 1), ("w20", 2), ("w50", 5), ("w80", 8), ("w90", 9)]:
        p = add(pool, name)
        play(pool, p, wins, 10 - wins, iteration=1)
        play(pool, p, 10, 0, iteration=1, hinted=True)  # hinted plays never count
    add(pool, "unplayed")
    play(pool, add(pool, "rejected", admitted=False), 5, 5, iteration=1)
    # 0.2, 0.5, 0.8 frontier (closed range); 0.9 mastered; 0.1 out of reach
    expected = {"iteration": 1, "frontier": 3, "mastered": 1, "out_of_reach": 1, "total": 5}
    assert pool.bands(1) == expected
    assert pool.bands(0)["total"] == 0  # nothing played yet at iteration 0
    w20 = prog("w20")
    play(pool, w20, 10, 0, iteration=2)  # w20 now 12/20 = 0.6 overall, 10/10 in window 1
    assert pool.bands(2) == {**expected, "iteration": 2}
    assert pool.bands(2, window=1) == {
        "iteration": 2,
        "frontier": 0,
        "mastered": 1,
        "out_of_reach": 0,
        "total": 1,
    }
    assert pool.record_bands(1) == expected
    assert pool.record_bands(1) == expected  # re-recording replaces, never duplicates
    assert pool.band_history() == [expected]


# -- transactions, resume, disk ------------------------------------------------------------------


def test_transaction_is_atomic_and_nests(pool):
    a = prog("a")
    with pytest.raises(RuntimeError):
        with pool.transaction():
            pool.add_program(a, Verdict(a.env_id, True), 0, {})
            play(pool, a, 1, 1)
            raise RuntimeError("killed between two writes")
    assert pool.counts()["programs"] == 0 and pool.counts()["episodes"] == 0
    with pool.transaction():
        pool.add_program(a, Verdict(a.env_id, True), 0, {})
        with pytest.raises(sqlite3.IntegrityError):
            pool.record_episodes(  # second row violates the foreign key: the whole call undone
                [EpisodeRow(a.env_id, 0, 0, False, 1.0, 1), EpisodeRow("x", 0, 1, False, 1, 1)]
            )
    assert pool.counts()["programs"] == 1 and pool.counts()["episodes"] == 0


def write_iteration(pool: Pool, it: int, *, half: bool = False) -> None:
    """What one loop iteration writes: 2 design attempts (1 admitted), plain plays of every
    active env, hinted plays of the new design, the previous design's reward, bands."""
    with pool.transaction():
        pool.record_attempt(it, it, SKILL, 0, failures=["no code block"], reward=-1.0)
        p = prog(f"it{it}")
        pool.add_program(p, Verdict(p.env_id, True), it, {"regen": it, "attempt": 1})
        pool.record_attempt(it, it, SKILL, 1, env_id=p.env_id, admitted=True)
    play(pool, p, 2, 2, iteration=it)
    if half:  # killed here: hinted plays, rewards and bands never written
        return
    play(pool, p, 3, 1, iteration=it, hinted=True)
    for env in pool.admitted():
        if env.env_id != p.env_id:
            play(pool, env, 1, 3, iteration=it)
    if it > 1:  # the window of the previous design closes now
        prev = prog(f"it{it - 1}")
        pool.record_designer_reward(
            prev.env_id, it - 1, it, 0.4, win_rate=0.25, regret=0.25, hint_ok=True
        )
    pool.record_bands(it)


def snapshot(pool: Pool):
    return pool.counts(), list(pool.export_rows()), pool.attempts(), pool.band_history()


def test_truncate_after_then_rerun_has_no_duplicates(tmp_path):
    with Pool(":memory:") as clean:
        write_iteration(clean, 1)
        after_1 = snapshot(clean)
        write_iteration(clean, 2)
        expected = snapshot(clean)
    assert expected[0] == {
        "programs": 2,
        "design_attempts": 4,
        "episodes": 4 + 4 + 4 + 4 + 4,  # it1: plain + hinted; it2: plain + hinted + it1's env
        "designer_rewards": 1,
        "bands": 2,
    }
    with Pool(tmp_path / "pool.sqlite") as pool:
        write_iteration(pool, 1)
        write_iteration(pool, 2, half=True)
        pool.record_designer_reward(  # killed later: iteration 1's design was scored
            prog("it1").env_id, 1, 2, 0.1, win_rate=0.5, regret=0.0, hint_ok=True
        )
        assert pool.attempts(1)[1]["reward"] == 0.1
        deleted = pool.truncate_after(1)
        assert deleted == {
            "episodes": 4,
            "designer_rewards": 1,
            "design_attempts": 2,
            "bands": 0,
            "programs": 1,
        }
        assert snapshot(pool) == after_1  # including iteration 1's attempt reward, cleared again
        write_iteration(pool, 2)
        assert snapshot(pool) == expected
        assert pool.truncate_after(2) == dict.fromkeys(deleted, 0)
        assert latest_iteration(pool) == 2


def test_reopen_from_disk(tmp_path):
    path = tmp_path / "pool.sqlite"
    with Pool(path) as pool:
        write_iteration(pool, 1)
        before = snapshot(pool)
    with Pool(path) as pool:
        assert snapshot(pool) == before
        p = prog("it1")
        assert pool.add_program(p, Verdict(p.env_id, True), 1, {}) is False
        assert pool.memory()[0].win_rate == 2 / 4


def test_killed_process_leaves_consistent_db(tmp_path):
    path = tmp_path / "pool.sqlite"
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from spade.envs.pool import EpisodeRow, Pool
        from spade.types import Program, Verdict
        pool = Pool({str(path)!r})
        p = Program.from_code("class AEnv:\\n    pass\\n", skill="Optimization")
        pool.add_program(p, Verdict(p.env_id, True), 1, {{}})
        pool.record_episodes([EpisodeRow(p.env_id, 1, s, False, 1.0, 1) for s in range(8)])
        with pool.transaction():
            pool.record_episodes([EpisodeRow(p.env_id, 2, s, False, 0.0, 1) for s in range(500)])
            pool.record_attempt(2, 0, "Optimization", 0, reward=-1.0)
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()
    with Pool(path) as pool:
        assert pool._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counts = pool.counts()
        assert (counts["programs"], counts["episodes"], counts["design_attempts"]) == (1, 8, 0)
        assert latest_iteration(pool) == 1


def test_export_rows_pages(pool):
    names = [f"e{i}" for i in range(5)]
    for n in names:
        p = add(pool, n)
        play(pool, p, 1, 3)
    add(pool, "rejected", admitted=False)
    e1 = prog("e1").env_id
    pool.record_designer_reward(e1, 0, 4, 0.2, win_rate=0.25, regret=0.5, hint_ok=True)
    pool.record_designer_reward(e1, 1, 8, 0.6, win_rate=0.25, regret=0.1, hint_ok=False)
    rows = list(pool.export_rows(page=2))
    assert (rows[1]["designer_reward"], rows[1]["regret"], rows[1]["hint_ok"]) == (0.6, 0.1, False)
    assert [r["description"] for r in rows] == [f"Env {n}." for n in [*names, "rejected"]]
    assert rows[0]["plays"] == 4 and rows[0]["win_rate"] == 0.25
    assert rows[0]["hinted_plays"] == 0 and rows[0]["hinted_win_rate"] is None
    assert rows[-1]["admitted"] is False and rows[0]["designer_reward"] is None
    assert "seq" not in rows[0]
