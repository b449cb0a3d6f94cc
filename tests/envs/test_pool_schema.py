"""The pool's schema: a new file gets the current version in WAL mode, another version is
refused, and a version-1 pool is migrated in place with its plays."""

from __future__ import annotations

import sqlite3

import pytest

from spade.envs.pool import EpisodeRow, Pool
from spade.envs.pool_schema import PoolSchemaError
from spade.types import Program, Verdict


def add(pool: Pool, name: str) -> Program:
    code = f'"""Env {name}."""\n\nclass {name.title()}Env:\n    pass\n'
    p = Program.from_code(code, source=f"design:{name}", hint="think", skill="Logical Deduction")
    assert pool.add_program(p, Verdict(p.env_id, True), 0, {"attempt": 0})
    return p


def test_schema_version_and_wal(tmp_path):
    with Pool(tmp_path / "run" / "pool.sqlite") as p:
        assert p._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert [tuple(r) for r in p._conn.execute("SELECT version FROM schema_version")] == [(2,)]
        assert p.counts() == dict.fromkeys(
            ["programs", "design_attempts", "episodes", "designer_rewards", "bands"], 0
        )


def test_schema_version_mismatch_refuses_to_open(tmp_path):
    path = tmp_path / "pool.sqlite"
    Pool(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    conn.close()
    with pytest.raises(PoolSchemaError, match="schema version 99"):
        Pool(path)


VERSION_1_EPISODES = """CREATE TABLE episodes (
        env_id TEXT NOT NULL REFERENCES programs (env_id),
        iteration INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        hinted INTEGER NOT NULL CHECK (hinted IN (0, 1)),
        return_ REAL NOT NULL,
        turns INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        UNIQUE (env_id, iteration, seed, hinted)
    )"""


def test_a_version_1_pool_is_migrated_with_its_plays(tmp_path):
    # a pool as version 1 wrote it: the episodes table without `play`
    path = tmp_path / "pool.sqlite"
    with Pool(path) as pool:
        p = add(pool, "a")
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE episodes")
        conn.execute(VERSION_1_EPISODES)
        conn.execute("CREATE INDEX episodes_iteration ON episodes (iteration)")
        conn.executemany(
            "INSERT INTO episodes VALUES (?, 0, ?, ?, ?, 1, 5)",
            [(p.env_id, 0, 0, 1.0), (p.env_id, 1, 0, 0.0), (p.env_id, 0, 1, 1.0)],
        )
        conn.execute("UPDATE schema_version SET version = 1")
    conn.close()
    with Pool(path) as pool:
        assert pool._conn.execute("SELECT version FROM schema_version").fetchone()[0] == 2
        assert pool.returns(p.env_id, hinted=False) == [1.0, 0.0]
        assert pool.paired_returns(p.env_id, 0) == ([1.0], [1.0])
        # the new key: a second play of seed 0 is a new row, the same play is not
        assert pool.record_episodes([EpisodeRow(p.env_id, 0, 0, False, 0.0, 1, play=1)]) == 1
        assert pool.record_episodes([EpisodeRow(p.env_id, 0, 0, False, 0.0, 1, play=1)]) == 0
        assert pool.returns(p.env_id, hinted=False) == [1.0, 0.0, 0.0]
        index = pool._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'episodes_iteration'"
        ).fetchone()
        assert index is not None
