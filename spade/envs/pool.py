"""The environment pool and the Designer's memory, on SQLite (one file per run).

What is stored (one table each, schema in `spade.envs.pool_schema`, versioned in
`schema_version`):

- programs: every program added, by content hash (`env_id`), admitted or not, with its verdict
  and provenance (exemplar env_ids, grounding document title, regen, attempt index);
- design_attempts: one row per Designer attempt, valid or not, with its failures and reward;
- episodes: one row per Agent play (env, iteration, seed, play of that seed, hinted or plain),
  return and sizes;
- designer_rewards: one row per scored design window (reward, regret, win rate, gate outcome);
- bands: the frontier / mastered / out-of-reach census of every iteration.

This module opens the file and writes it; the reads and the Designer's memory (`memory`,
`exemplars`, `negative_example`, `bands`, ...) are `spade.envs.pool_queries.PoolQueries`, which
`Pool` extends, so one Pool object does both.

Durability: WAL journal, `synchronous=FULL`, and every public write runs in one transaction
(`with pool.transaction():` groups several calls into one). A process killed at any point leaves
the file consistent at the last committed transaction. Resume (`--resume`) calls
`truncate_after(last_complete_iteration)` to drop a partly written iteration, then re-runs it;
all writes are idempotent by their natural keys, so nothing is ever stored twice.

The pool's modules import only `spade.types` (and each other): they store what the loop hands
them and know nothing about how rewards are computed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from spade.envs.pool_queries import PoolQueries
from spade.envs.pool_schema import ensure_schema
from spade.types import CheckFailure, Episode, Program, Verdict


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


def _failure_json(failure: CheckFailure | str) -> dict[str, str]:
    if isinstance(failure, CheckFailure):
        return {"check": failure.check, "reason": failure.reason}
    return {"check": "design", "reason": str(failure)}


class Pool(PoolQueries):
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
                ensure_schema(self._conn, self.path)
        except BaseException:
            self._conn.close()
            raise

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
