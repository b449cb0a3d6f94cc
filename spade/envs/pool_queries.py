"""The pool's reads and the Designer's memory: what `spade.envs.pool.Pool` answers.

`PoolQueries` is the read half of the pool (Pool adds the connection, transactions and writes):
programs by env_id, the admitted ones, returns and paired returns of an environment, the plain
record of every environment, the Designer's memory (`memory`, `exemplars`, `negative_example`),
the band census, the design attempts, row counts and the export rows. Every query is one SQL
statement (or one per page) on the pool's connection; none writes.

Read conventions: "win rate" is the fraction of plays with return > 0 (a win, SPADE.md section 1)
over plain (unhinted) plays unless `hinted=True`; "most recent" orders by creation iteration,
then insertion order. Selection that needs randomness takes an explicit `random.Random`.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
from collections.abc import Iterator
from typing import Any, Literal

from spade.envs.pool_schema import TABLES
from spade.types import Program

EXEMPLAR_WIN_RATE = (0.15, 0.85)
"""Exemplars are drawn from environments whose win rate lies in this closed range."""
EXEMPLAR_TOP = 10
"""... among the top this many by regret."""
NEGATIVE_TOO_EASY = 0.9
NEGATIVE_TOO_HARD = 0.1
FRONTIER = (0.2, 0.8)
"""Band edges: frontier is the closed range, mastered above it, out of reach below it."""

_WIN_RATE_SQL = "AVG(CASE WHEN return_ > 0 THEN 1.0 ELSE 0.0 END)"


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


class PoolQueries:
    """The pool's reads, on the connection `spade.envs.pool.Pool` opens (`_conn`, rows as
    `sqlite3.Row`)."""

    _conn: sqlite3.Connection

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
