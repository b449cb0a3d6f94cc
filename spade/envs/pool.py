"""The environment pool and the Designer's memory, on SQLite (one file per run).

What is stored (one table each, schema below, versioned in `schema_version`):

- programs: every program added, by content hash (`env_id`), admitted or not, with its verdict
  and provenance (exemplar env_ids, grounding document title, regen, attempt index);
- design_attempts: one row per Designer attempt, valid or not, with its failures and reward;
- episodes: one row per Agent play (env, iteration, seed, play of that seed, hinted or plain),
  return and sizes;
- designer_rewards: one row per scored design window (reward, regret, win rate, gate outcome);
- bands: the frontier / mastered / out-of-reach census of every iteration.

Durability: WAL journal, `synchronous=FULL`, and every public write runs in one transaction
(`with pool.transaction():` groups several calls into one). A process killed at any point leaves
the file consistent at the last committed transaction. Resume (`--resume`) calls
`truncate_after(last_complete_iteration)` to drop a partly written iteration, then re-runs it;
all writes are idempotent by their natural keys, so nothing is ever stored twice.

Read conventions: "win rate" is the fraction of plays with return > 0 (a win, SPADE.md section 1)
over plain (unhinted) plays unless `hinted=True`; "most recent" orders by creation iteration,
then insertion order. Selection that needs randomness takes an explicit `random.Random`.

This module imports only `spade.types`: it stores what the loop hands it and knows nothing
about how rewards are computed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from spade.types import CheckFailure, Episode, Program, Verdict

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

EXEMPLAR_WIN_RATE = (0.15, 0.85)
"""Exemplars are drawn from environments whose win rate lies in this closed range."""
EXEMPLAR_TOP = 10
"""... among the top this many by regret."""
NEGATIVE_TOO_EASY = 0.9
NEGATIVE_TOO_HARD = 0.1
FRONTIER = (0.2, 0.8)
"""Band edges: frontier is the closed range, mastered above it, out of reach below it."""

_WIN_RATE_SQL = "AVG(CASE WHEN return_ > 0 THEN 1.0 ELSE 0.0 END)"


class PoolSchemaError(RuntimeError):
    """The database was written by another schema version."""


@dataclasses.dataclass(frozen=True)
class EpisodeRow:
    """One Agent play as the pool stores it."""

    env_id: str
    iteration: int
    seed: int
    hinted: bool
    return_: float
    turns: int
    tokens: int = 0
    """Tokens the Agent generated in the episode (0 when the backend does not report them)."""
    play: int = 0
    """Which play of this seed it was (0, 1, ...: `PlayConfig.plays_per_seed` plays share one)."""

    @classmethod
    def of(
        cls, episode: Episode, *, iteration: int, hinted: bool, tokens: int = 0, play: int = 0
    ) -> EpisodeRow:
        if episode.seed is None:
            raise ValueError("the pool stores seeded episodes only (seeds are explicit)")
        return cls(
            env_id=episode.env_id,
            iteration=iteration,
            seed=episode.seed,
            hinted=hinted,
            return_=episode.return_,
            turns=len(episode.turns),
            tokens=tokens,
            play=play,
        )

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> EpisodeRow:
        """From a dict with these field names (`return` accepted for `return_`)."""
        return cls(
            env_id=row["env_id"],
            iteration=row["iteration"],
            seed=row["seed"],
            hinted=row["hinted"],
            return_=row["return_"] if "return_" in row else row["return"],
            turns=row["turns"],
            tokens=row.get("tokens", 0),
            play=row.get("play", 0),
        )


@dataclasses.dataclass(frozen=True)
class MemoryEntry:
    """One admitted environment as the Designer's memory shows it."""

    program: Program
    created_iteration: int
    win_rate: float | None
    """Plain win rate over all its plays; None if it was never played."""
    plays: int
    regret: float | None
    """Regret of its latest designer reward whose hint passed the gates; None if none did
    (a gated-out hint's regret is often the "password" exploit and must not rank exemplars)."""

    @property
    def env_id(self) -> str:
        return self.program.env_id

    @property
    def skill(self) -> str:
        return self.program.skill


def _failure_json(failure: CheckFailure | str) -> dict[str, str]:
    if isinstance(failure, CheckFailure):
        return {"check": failure.check, "reason": failure.reason}
    return {"check": "design", "reason": str(failure)}


class Pool:
    """The run's environment pool and memory: one SQLite file (or ":memory:" for tests).

    Use as a context manager or call `close()`. Not thread-safe: one Pool per thread; several
    processes may open the same file (WAL readers do not block the writer).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        self._conn.row_factory = sqlite3.Row
        self._depth = 0
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        try:
            with self.transaction():
                self._ensure_schema()
        except BaseException:
            self._conn.close()
            raise

    def _ensure_schema(self) -> None:
        exists = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        ).fetchone()
        if not exists:
            for statement in SCHEMA:
                self._conn.execute(statement)
            self._conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            return
        row = self._conn.execute("SELECT version FROM schema_version").fetchone()
        version = row["version"] if row else None
        if version == 1:
            self._migrate_from_1()
            version = SCHEMA_VERSION
        if version != SCHEMA_VERSION:
            raise PoolSchemaError(
                f"{self.path} has pool schema version {version}; this code reads {SCHEMA_VERSION}"
            )

    def _migrate_from_1(self) -> None:
        """Version 1 had no `episodes.play` (every play its own seed): rebuild the table with
        the new column and uniqueness, every old play `play` 0 (inside the caller's transaction,
        so an interrupted migration leaves the version-1 pool as it was)."""
        self._conn.execute("ALTER TABLE episodes RENAME TO episodes_v1")
        self._conn.execute("DROP INDEX IF EXISTS episodes_iteration")
        for statement in SCHEMA:
            if "TABLE episodes" in statement or "INDEX episodes_" in statement:
                self._conn.execute(statement)
        self._conn.execute(
            """INSERT INTO episodes (env_id, iteration, seed, hinted, return_, turns, tokens, play)
            SELECT env_id, iteration, seed, hinted, return_, turns, tokens, 0 FROM episodes_v1"""
        )
        self._conn.execute("DROP TABLE episodes_v1")
        self._conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    # -- lifetime and transactions ------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside commit together or not at all. Nests (inner blocks are savepoints:
        an exception caught inside the outer block undoes only the inner block's writes)."""
        depth = self._depth
        self._conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT sp{depth}")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth = depth
            if depth == 0:
                self._conn.execute("ROLLBACK")
            else:
                self._conn.execute(f"ROLLBACK TO sp{depth}")
                self._conn.execute(f"RELEASE sp{depth}")
            raise
        self._depth = depth
        if depth == 0:
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        else:
            self._conn.execute(f"RELEASE sp{depth}")

    # -- writes --------------------------------------------------------------------------------

    def add_program(
        self,
        program: Program,
        verdict: Verdict,
        iteration: int,
        provenance: Mapping[str, Any] | None = None,
    ) -> bool:
        """Store a program with its verdict. False (and nothing written) if its env_id exists.

        `provenance` is JSON data: by convention `exemplars` (env_ids), `grounding` (document
        title), `regen`, `attempt`; seeds use e.g. {"seed_file": ...}.
        """
        env_id = program.env_id
        if verdict.env_id != env_id:
            raise ValueError(f"verdict is for {verdict.env_id[:12]}, program is {env_id[:12]}")
        with self.transaction():
            cur = self._conn.execute(
                """INSERT OR IGNORE INTO programs (env_id, seq, code, hint, skill, description,
                    source, metadata, created_iteration, admitted, verdict, provenance)
                VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM programs),
                    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    env_id,
                    program.code,
                    program.hint,
                    program.skill,
                    program.description,
                    program.source,
                    json.dumps(dict(program.metadata), sort_keys=True),
                    int(iteration),
                    int(verdict.admitted),
                    json.dumps(verdict.to_json(), sort_keys=True),
                    json.dumps(dict(provenance or {}), sort_keys=True),
                ),
            )
            return cur.rowcount == 1

    def record_attempt(
        self,
        iteration: int,
        regen: int,
        skill: str,
        attempt: int,
        *,
        env_id: str | None = None,
        admitted: bool = False,
        failures: Sequence[CheckFailure | str] = (),
        reward: float | None = None,
    ) -> bool:
        """One Designer attempt, valid or not. False if (iteration, skill, attempt) exists.

        A failed attempt carries its reward (INVALID_DESIGN_REWARD) at once; an admitted one gets
        its reward later from `record_designer_reward`.
        """
        if admitted and env_id is None:
            raise ValueError("an admitted attempt needs its env_id")
        with self.transaction():
            cur = self._conn.execute(
                """INSERT OR IGNORE INTO design_attempts (iteration, regen, skill, attempt, env_id,
                    admitted, failures, reward, reward_iteration)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    int(iteration),
                    int(regen),
                    skill,
                    int(attempt),
                    env_id,
                    int(admitted),
                    json.dumps([_failure_json(f) for f in failures]),
                    None if reward is None else float(reward),
                    None if reward is None else int(iteration),
                ),
            )
            return cur.rowcount == 1

    def record_episodes(self, rows: Iterable[EpisodeRow | Mapping[str, Any]]) -> int:
        """Store plays (EpisodeRow or dicts of its fields); duplicates of (env_id, iteration,
        seed, hinted, play) are ignored. Returns how many rows were new."""
        values = []
        for row in rows:
            r = row if isinstance(row, EpisodeRow) else EpisodeRow.from_mapping(row)
            values.append(
                (r.env_id, int(r.iteration), int(r.seed), int(bool(r.hinted)))
                + (float(r.return_), int(r.turns), int(r.tokens), int(r.play))
            )
        with self.transaction():
            before = self._conn.total_changes
            self._conn.executemany(
                """INSERT OR IGNORE INTO episodes
                    (env_id, iteration, seed, hinted, return_, turns, tokens, play)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                values,
            )
            return self._conn.total_changes - before

    def record_designer_reward(
        self,
        env_id: str,
        regen: int,
        iteration: int,
        reward: float,
        *,
        win_rate: float,
        regret: float | None = None,
        plain_mean: float | None = None,
        hinted_mean: float | None = None,
        hint_ok: bool = False,
        hint_reason: str | None = None,
    ) -> bool:
        """The reward of one design window, recorded at `iteration` (the window's end).

        Also sets the reward of the admitted attempt that produced `env_id` in `regen`.
        False (and nothing written) if (env_id, regen) was already scored.
        """
        with self.transaction():
            cur = self._conn.execute(
                """INSERT OR IGNORE INTO designer_rewards (env_id, regen, iteration, reward,
                    regret, win_rate, plain_mean, hinted_mean, hint_ok, hint_reason)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    env_id,
                    int(regen),
                    int(iteration),
                    float(reward),
                    None if regret is None else float(regret),
                    float(win_rate),
                    None if plain_mean is None else float(plain_mean),
                    None if hinted_mean is None else float(hinted_mean),
                    int(hint_ok),
                    hint_reason,
                ),
            )
            if cur.rowcount != 1:
                return False
            self._conn.execute(
                """UPDATE design_attempts SET reward = ?, reward_iteration = ?
                WHERE env_id = ? AND regen = ? AND admitted = 1""",
                (float(reward), int(iteration), env_id, int(regen)),
            )
            return True

    def record_bands(self, iteration: int, window: int | None = None) -> dict[str, int]:
        """Compute `bands(iteration, window)` and store it (replacing that iteration's row)."""
        with self.transaction():
            counts = self.bands(iteration, window)
            self._conn.execute(
                """INSERT OR REPLACE INTO bands
                    (iteration, frontier, mastered, out_of_reach, total)
                VALUES (:iteration, :frontier, :mastered, :out_of_reach, :total)""",
                counts,
            )
            return counts

    def truncate_after(self, iteration: int) -> dict[str, int]:
        """Delete every record of iterations > `iteration` (rows deleted, per table).

        Used by --resume to drop a partly written iteration before re-running it. Attempt
        rewards that were set after `iteration` are cleared too.
        """
        it = int(iteration)
        deleted: dict[str, int] = {}
        with self.transaction():
            for table, column in (
                ("episodes", "iteration"),
                ("designer_rewards", "iteration"),
                ("design_attempts", "iteration"),
                ("bands", "iteration"),
                ("programs", "created_iteration"),
            ):
                cur = self._conn.execute(f"DELETE FROM {table} WHERE {column} > ?", (it,))
                deleted[table] = cur.rowcount
            self._conn.execute(
                """UPDATE design_attempts SET reward = NULL, reward_iteration = NULL
                WHERE reward_iteration > ?""",
                (it,),
            )
        return deleted

    # -- reads ---------------------------------------------------------------------------------

    @staticmethod
    def _program(row: sqlite3.Row) -> Program:
        return Program(
            code=row["code"],
            hint=row["hint"],
            skill=row["skill"],
            description=row["description"],
            metadata=json.loads(row["metadata"]),
            source=row["source"],
        )

    def __contains__(self, env_id: object) -> bool:
        row = self._conn.execute("SELECT 1 FROM programs WHERE env_id = ?", (env_id,))
        return row.fetchone() is not None

    def program(self, env_id: str) -> Program | None:
        row = self._conn.execute("SELECT * FROM programs WHERE env_id = ?", (env_id,)).fetchone()
        return self._program(row) if row else None

    def admitted(self, skill: str | None = None) -> list[Program]:
        """Admitted programs (of `skill`, if given), in insertion order."""
        rows = self._conn.execute(
            """SELECT * FROM programs WHERE admitted = 1 AND (? IS NULL OR skill = ?)
            ORDER BY seq""",
            (skill, skill),
        )
        return [self._program(r) for r in rows]

    def _episode_filter(
        self,
        env_id: str,
        hinted: bool,
        since_iteration: int | None,
        until_iteration: int | None,
    ) -> tuple[str, tuple[Any, ...]]:
        where = "env_id = ? AND hinted = ? AND iteration >= ? AND iteration <= ?"
        lo = -(2**62) if since_iteration is None else int(since_iteration)
        hi = 2**62 if until_iteration is None else int(until_iteration)
        return where, (env_id, int(hinted), lo, hi)

    def returns(
        self,
        env_id: str,
        *,
        hinted: bool = False,
        since_iteration: int | None = None,
        until_iteration: int | None = None,
    ) -> list[float]:
        """Returns of the plays in iterations [since, until], ordered by (iteration, seed).

        What the loop reads to rebuild a design window (e.g. after a resume)."""
        where, args = self._episode_filter(env_id, hinted, since_iteration, until_iteration)
        rows = self._conn.execute(
            f"SELECT return_ FROM episodes WHERE {where} ORDER BY iteration, seed, play", args
        )
        return [float(r["return_"]) for r in rows]

    def plain_record(self, until_iteration: int | None = None) -> dict[str, tuple[int, int]]:
        """(wins, plays) of the plain plays of every environment played at or before
        `until_iteration` (None: ever), by env_id; a win is a positive return."""
        hi = 2**62 if until_iteration is None else int(until_iteration)
        rows = self._conn.execute(
            """SELECT env_id, SUM(CASE WHEN return_ > 0 THEN 1 ELSE 0 END) AS wins,
                COUNT(*) AS plays
            FROM episodes WHERE hinted = 0 AND iteration <= ? GROUP BY env_id""",
            (hi,),
        )
        return {r["env_id"]: (int(r["wins"]), int(r["plays"])) for r in rows}

    def paired_returns(self, env_id: str, iteration: int) -> tuple[list[float], list[float]]:
        """(hinted, plain) returns at `iteration` on the (seed, play)s both arms played, by seed:
        the paired arms of the regret (SPADE.md section 3, "Ours")."""
        rows = self._conn.execute(
            """SELECT h.return_ AS hinted, p.return_ AS plain
            FROM episodes h JOIN episodes p
                ON p.env_id = h.env_id AND p.iteration = h.iteration AND p.seed = h.seed
                AND p.play = h.play
            WHERE h.env_id = ? AND h.iteration = ? AND h.hinted = 1 AND p.hinted = 0
            ORDER BY h.seed, h.play""",
            (env_id, int(iteration)),
        ).fetchall()
        return [float(r["hinted"]) for r in rows], [float(r["plain"]) for r in rows]

    def memory(self, limit: int = 200) -> list[MemoryEntry]:
        """The `limit` most recent admitted environments (most recent first), each with its
        whole code, plain win rate, play count and latest gate-passing regret."""
        rows = self._conn.execute(
            f"""SELECT p.*, w.win_rate, COALESCE(w.plays, 0) AS plays,
                (SELECT d.regret FROM designer_rewards d
                 WHERE d.env_id = p.env_id AND d.hint_ok = 1 AND d.regret IS NOT NULL
                 ORDER BY d.regen DESC, d.iteration DESC LIMIT 1) AS regret
            FROM programs p LEFT JOIN (
                SELECT env_id, {_WIN_RATE_SQL} AS win_rate, COUNT(*) AS plays
                FROM episodes WHERE hinted = 0 GROUP BY env_id
            ) w ON w.env_id = p.env_id
            WHERE p.admitted = 1
            ORDER BY p.created_iteration DESC, p.seq DESC LIMIT ?""",
            (int(limit),),
        )
        return [
            MemoryEntry(
                program=self._program(r),
                created_iteration=r["created_iteration"],
                win_rate=None if r["win_rate"] is None else float(r["win_rate"]),
                plays=r["plays"],
                regret=None if r["regret"] is None else float(r["regret"]),
            )
            for r in rows
        ]

    def exemplars(
        self, skill: str, rng: random.Random, k: int = 2, *, memory_limit: int = 200
    ) -> list[MemoryEntry]:
        """Up to k Designer exemplars: memory entries of `skill` with win rate in
        EXEMPLAR_WIN_RATE, sampled (by `rng`) from the top EXEMPLAR_TOP by regret.

        Entries without a regret (seeds, gated-out hints) rank below every regret, then by
        recency, so an empty history still yields exemplars. Deterministic given rng's state.
        """
        lo, hi = EXEMPLAR_WIN_RATE
        candidates = [
            e
            for e in self.memory(memory_limit)
            if e.skill == skill and e.win_rate is not None and lo <= e.win_rate <= hi
        ]
        # sorted() is stable: ties keep memory's most-recent-first order.
        ranked = sorted(candidates, key=lambda e: (e.regret is None, -(e.regret or 0.0)))
        top = ranked[:EXEMPLAR_TOP]
        return rng.sample(top, min(k, len(top)))

    def negative_example(
        self, skill: str, rng: random.Random, *, memory_limit: int = 200
    ) -> tuple[Program, Literal["too easy", "too hard"]] | None:
        """One memory environment of `skill` with win rate > 0.9 ("too easy") or < 0.1
        ("too hard"), chosen by `rng`; None if there is none."""
        candidates = [
            e
            for e in self.memory(memory_limit)
            if e.skill == skill
            and e.win_rate is not None
            and (e.win_rate > NEGATIVE_TOO_EASY or e.win_rate < NEGATIVE_TOO_HARD)
        ]
        if not candidates:
            return None
        chosen = rng.choice(candidates)
        assert chosen.win_rate is not None
        return chosen.program, "too easy" if chosen.win_rate > NEGATIVE_TOO_EASY else "too hard"

    def bands(self, iteration: int, window: int | None = None) -> dict[str, int]:
        """Census of admitted environments with at least one plain play at or before
        `iteration` (only in the last `window` iterations, if given), by plain win rate w:
        frontier 0.2 <= w <= 0.8, mastered w > 0.8, out_of_reach w < 0.2."""
        lo = -(2**62) if window is None else int(iteration) - int(window) + 1
        rows = self._conn.execute(
            f"""SELECT {_WIN_RATE_SQL} AS w FROM episodes e
            JOIN programs p ON p.env_id = e.env_id
            WHERE p.admitted = 1 AND e.hinted = 0 AND e.iteration <= ? AND e.iteration >= ?
            GROUP BY e.env_id""",
            (int(iteration), lo),
        ).fetchall()
        rates = [float(r["w"]) for r in rows]
        f_lo, f_hi = FRONTIER
        return {
            "iteration": int(iteration),
            "frontier": sum(1 for w in rates if f_lo <= w <= f_hi),
            "mastered": sum(1 for w in rates if w > f_hi),
            "out_of_reach": sum(1 for w in rates if w < f_lo),
            "total": len(rates),
        }

    def band_history(self) -> list[dict[str, int]]:
        """Every recorded `bands` row, by iteration."""
        rows = self._conn.execute("SELECT * FROM bands ORDER BY iteration")
        return [dict(r) for r in rows]

    def attempts(self, iteration: int | None = None) -> list[dict[str, Any]]:
        """Design attempts (of one iteration, if given) as dicts, in (iteration, skill, attempt)
        order; `failures` decoded to a list of {"check", "reason"}."""
        rows = self._conn.execute(
            """SELECT * FROM design_attempts WHERE (? IS NULL OR iteration = ?)
            ORDER BY iteration, skill, attempt""",
            (iteration, iteration),
        )
        return [{**dict(r), "failures": json.loads(r["failures"])} for r in rows]

    def counts(self) -> dict[str, int]:
        """Rows per table."""
        return {
            t: self._conn.execute(f"SELECT COUNT(*) AS n FROM {t}").fetchone()["n"] for t in TABLES
        }

    def export_rows(self, page: int = 256) -> Iterator[dict[str, Any]]:
        """One dict per stored program (admitted or not), in insertion order: its fields,
        decoded verdict / provenance / metadata, plain and hinted play counts and win rates,
        and its latest designer reward and regret. Read page by page."""
        last = 0
        while True:
            rows = self._conn.execute(
                f"""SELECT p.*,
                    (SELECT COUNT(*) FROM episodes e
                     WHERE e.env_id = p.env_id AND e.hinted = 0) AS plays,
                    (SELECT {_WIN_RATE_SQL} FROM episodes e
                     WHERE e.env_id = p.env_id AND e.hinted = 0) AS win_rate,
                    (SELECT COUNT(*) FROM episodes e
                     WHERE e.env_id = p.env_id AND e.hinted = 1) AS hinted_plays,
                    (SELECT {_WIN_RATE_SQL} FROM episodes e
                     WHERE e.env_id = p.env_id AND e.hinted = 1) AS hinted_win_rate,
                    d.reward AS designer_reward, d.regret AS regret, d.hint_ok AS hint_ok
                FROM programs p LEFT JOIN designer_rewards d ON d.rowid = (
                    SELECT rowid FROM designer_rewards WHERE env_id = p.env_id
                    ORDER BY regen DESC, iteration DESC LIMIT 1)
                WHERE p.seq > ? ORDER BY p.seq LIMIT ?""",
                (last, int(page)),
            ).fetchall()
            if not rows:
                return
            for r in rows:
                row = dict(r)
                for key in ("metadata", "verdict", "provenance"):
                    row[key] = json.loads(row[key])
                row["admitted"] = bool(row["admitted"])
                row["hint_ok"] = None if row["hint_ok"] is None else bool(row["hint_ok"])
                last = row.pop("seq")
                yield row
