"""The pool's SQLite schema: its five tables, its version, and the migration of an older file.

`ensure_schema` runs inside the opening transaction of `spade.envs.pool.Pool`: it creates the
tables in an empty file, migrates a version-1 file in place, and refuses any other version
(`PoolSchemaError`). What each table holds is described in `spade.envs.pool`.
"""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 2
"""2: `episodes.play` (plays of one seed, `PlayConfig.plays_per_seed`); a version-1 pool is
migrated in place (its plays get `play` 0)."""

SCHEMA = (
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    # `seq` is the insertion order; rowid is not used because VACUUM may renumber it.
    """CREATE TABLE programs (
        env_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL UNIQUE,
        code TEXT NOT NULL,
        hint TEXT NOT NULL,
        skill TEXT NOT NULL,
        description TEXT NOT NULL,
        source TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_iteration INTEGER NOT NULL,
        admitted INTEGER NOT NULL CHECK (admitted IN (0, 1)),
        verdict TEXT NOT NULL,
        provenance TEXT NOT NULL
    )""",
    "CREATE INDEX programs_recent ON programs (admitted, created_iteration, seq)",
    # `attempt` is unique per (iteration, skill): the loop numbers all attempts at a skill in an
    # iteration, across requested environments. `reward_iteration` is when `reward` was set, so
    # truncate_after can forget rewards that arrived after the kept iterations.
    """CREATE TABLE design_attempts (
        iteration INTEGER NOT NULL,
        regen INTEGER NOT NULL,
        skill TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        env_id TEXT,
        admitted INTEGER NOT NULL CHECK (admitted IN (0, 1)),
        failures TEXT NOT NULL,
        reward REAL,
        reward_iteration INTEGER,
        UNIQUE (iteration, skill, attempt)
    )""",
    "CREATE INDEX design_attempts_env ON design_attempts (env_id, regen)",
    """CREATE TABLE episodes (
        env_id TEXT NOT NULL REFERENCES programs (env_id),
        iteration INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        hinted INTEGER NOT NULL CHECK (hinted IN (0, 1)),
        return_ REAL NOT NULL,
        turns INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        play INTEGER NOT NULL DEFAULT 0,
        UNIQUE (env_id, iteration, seed, hinted, play)
    )""",
    "CREATE INDEX episodes_iteration ON episodes (iteration)",
    """CREATE TABLE designer_rewards (
        env_id TEXT NOT NULL REFERENCES programs (env_id),
        regen INTEGER NOT NULL,
        iteration INTEGER NOT NULL,
        reward REAL NOT NULL,
        regret REAL,
        win_rate REAL NOT NULL,
        plain_mean REAL,
        hinted_mean REAL,
        hint_ok INTEGER NOT NULL CHECK (hint_ok IN (0, 1)),
        hint_reason TEXT,
        UNIQUE (env_id, regen)
    )""",
    """CREATE TABLE bands (
        iteration INTEGER PRIMARY KEY,
        frontier INTEGER NOT NULL,
        mastered INTEGER NOT NULL,
        out_of_reach INTEGER NOT NULL,
        total INTEGER NOT NULL
    )""",
)
TABLES = ("programs", "design_attempts", "episodes", "designer_rewards", "bands")


class PoolSchemaError(RuntimeError):
    """The database was written by another schema version."""


def ensure_schema(conn: sqlite3.Connection, path: str) -> None:
    """Create the tables in a new pool, migrate a version-1 pool, or raise `PoolSchemaError`
    (`path` names the file in the message). Runs inside the caller's transaction."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if not exists:
        for statement in SCHEMA:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        return
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    version = row["version"] if row else None
    if version == 1:
        _migrate_from_1(conn)
        version = SCHEMA_VERSION
    if version != SCHEMA_VERSION:
        raise PoolSchemaError(
            f"{path} has pool schema version {version}; this code reads {SCHEMA_VERSION}"
        )


def _migrate_from_1(conn: sqlite3.Connection) -> None:
    """Version 1 had no `episodes.play` (every play its own seed): rebuild the table with
    the new column and uniqueness, every old play `play` 0 (inside the caller's transaction,
    so an interrupted migration leaves the version-1 pool as it was)."""
    conn.execute("ALTER TABLE episodes RENAME TO episodes_v1")
    conn.execute("DROP INDEX IF EXISTS episodes_iteration")
    for statement in SCHEMA:
        if "TABLE episodes" in statement or "INDEX episodes_" in statement:
            conn.execute(statement)
    conn.execute(
        """INSERT INTO episodes (env_id, iteration, seed, hinted, return_, turns, tokens, play)
        SELECT env_id, iteration, seed, hinted, return_, turns, tokens, 0 FROM episodes_v1"""
    )
    conn.execute("DROP TABLE episodes_v1")
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
