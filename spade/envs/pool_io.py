"""Pools in and out: read-only access, JSONL / Parquet export, import with validation.

    rows = list(export_rows(pool))                       # one flat dict per environment
    write_export(rows, "pool.parquet")                   # or .jsonl; schema: docs/report.md
    candidates = read_source(Path("released_pool/"))     # game_*.py files, or one of our exports
    outcome = asyncio.run(import_candidates(candidates, pool, sandbox))

An export row is flat (str, int, float, bool or null): nested values (metadata, verdict,
provenance) are JSON strings in both formats, so `datasets.load_dataset("json" | "parquet",
data_files=...)` infers one schema for every row. Import validates every environment in the
sandbox; an admitted one is added with provenance {"imported_from": ..., "origin": {...}} where
`origin` keeps every exported field the new pool does not store itself (its verdict, provenance,
play statistics), so export -> import -> export loses nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade.envs.pool import Pool
from spade.envs.pool_queries import FRONTIER
from spade.envs.pool_schema import SCHEMA_VERSION, PoolSchemaError
from spade.files import atomic_path
from spade.types import CheckFailure, Program, Verdict

if TYPE_CHECKING:
    from spade.envs.checks import ValidatorConfig
    from spade.sandbox import SandboxAPI

# Column -> (JSON-encoded?, pyarrow type name). The order is the export's column order.
COLUMNS: dict[str, tuple[bool, str]] = {
    "env_id": (False, "string"),
    "sha256": (False, "string"),
    "skill": (False, "string"),
    "description": (False, "string"),
    "hint": (False, "string"),
    "code": (False, "string"),
    "source": (False, "string"),
    "created_iteration": (False, "int64"),
    "admitted": (False, "bool_"),
    "band": (False, "string"),
    "plays": (False, "int64"),
    "win_rate": (False, "float64"),
    "hinted_plays": (False, "int64"),
    "hinted_win_rate": (False, "float64"),
    "regret": (False, "float64"),
    "designer_reward": (False, "float64"),
    "hint_ok": (False, "bool_"),
    "metadata": (True, "string"),
    "verdict": (True, "string"),
    "provenance": (True, "string"),
}
JSON_COLUMNS = tuple(k for k, (encoded, _) in COLUMNS.items() if encoded)
# What Pool.add_program stores itself; everything else of an imported row goes to `origin`.
STORED = ("env_id", "sha256", "skill", "description", "hint", "code", "source", "metadata")


def pool_path(path: str | Path) -> Path:
    """A run directory (an existing one, or a new path without a suffix) means its
    pool.sqlite; any other path is the database itself."""
    path = Path(path)
    run_dir = path.is_dir() or (not path.exists() and not path.suffix)
    return path / "pool.sqlite" if run_dir else path


class ReadOnlyPool(Pool):
    """A Pool opened with SQLite's read-only mode: safe to use while a run is writing the file
    (WAL readers see the last committed transaction). Every write raises sqlite3.Error."""

    def __init__(self, path: str | Path) -> None:
        path = pool_path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no pool database at {path}")
        self.path = str(path)
        uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
        self._conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)
        self._conn.row_factory = sqlite3.Row
        self._depth = 0
        try:
            row = self._conn.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.DatabaseError as err:
            self._conn.close()
            raise PoolSchemaError(f"{path} is not a spade pool ({err})") from err
        if row is None or row["version"] != SCHEMA_VERSION:
            self._conn.close()
            raise PoolSchemaError(
                f"{path} has pool schema version {row and row['version']}; "
                f"this code reads {SCHEMA_VERSION}"
            )

    def __enter__(self) -> ReadOnlyPool:
        return self

    def find(self, prefix: str) -> list[str]:
        """env_ids that start with `prefix` (at most 10)."""
        prefix = prefix.strip().lower()
        if not prefix or prefix.strip("0123456789abcdef"):
            return []
        rows = self._conn.execute(
            "SELECT env_id FROM programs WHERE substr(env_id, 1, ?) = ? ORDER BY seq LIMIT 10",
            (len(prefix), prefix),
        )
        return [r["env_id"] for r in rows]

    def play_history(self, env_id: str) -> list[dict[str, Any]]:
        """Per (iteration, hinted): plays, wins, mean return and mean turns, by iteration."""
        rows = self._conn.execute(
            """SELECT iteration, hinted, COUNT(*) AS plays,
                SUM(CASE WHEN return_ > 0 THEN 1 ELSE 0 END) AS wins,
                AVG(return_) AS mean_return, AVG(turns) AS mean_turns
            FROM episodes WHERE env_id = ? GROUP BY iteration, hinted
            ORDER BY iteration, hinted""",
            (env_id,),
        )
        return [{**dict(r), "hinted": bool(r["hinted"])} for r in rows]

    def designer_rewards(self, env_id: str | None = None) -> list[dict[str, Any]]:
        """Scored design windows (of one environment, if given), by (iteration, regen)."""
        rows = self._conn.execute(
            """SELECT d.*, p.skill FROM designer_rewards d
            JOIN programs p ON p.env_id = d.env_id
            WHERE ? IS NULL OR d.env_id = ? ORDER BY d.iteration, d.regen, p.seq""",
            (env_id, env_id),
        )
        return [{**dict(r), "hint_ok": bool(r["hint_ok"])} for r in rows]

    def episode_counts(self) -> list[dict[str, Any]]:
        """Plays and wins per (iteration, hinted, new, turns), where `new` means the environment
        was created in that iteration: every episode statistic the report draws, without
        reading one row per episode."""
        rows = self._conn.execute(
            """SELECT e.iteration, e.hinted, p.created_iteration = e.iteration AS new, e.turns,
                COUNT(*) AS plays, SUM(CASE WHEN e.return_ > 0 THEN 1 ELSE 0 END) AS wins
            FROM episodes e JOIN programs p ON p.env_id = e.env_id
            GROUP BY e.iteration, e.hinted, new, e.turns
            ORDER BY e.iteration, e.hinted, new, e.turns"""
        )
        return [{**dict(r), "hinted": bool(r["hinted"]), "new": bool(r["new"])} for r in rows]


def band_of(win_rate: float | None) -> str | None:
    """The pool's band for a plain win rate (see Pool.bands); None if never played."""
    if win_rate is None:
        return None
    lo, hi = FRONTIER
    return "frontier" if lo <= win_rate <= hi else "mastered" if win_rate > hi else "out_of_reach"


def export_rows(pool: Pool, admitted_only: bool = False) -> Iterator[dict[str, Any]]:
    """One flat row per program (see COLUMNS), in insertion order."""
    for row in pool.export_rows():
        if admitted_only and not row["admitted"]:
            continue
        flat = {
            **row,
            "sha256": hashlib.sha256(row["code"].encode("utf-8", "surrogatepass")).hexdigest(),
            "band": band_of(row["win_rate"]),
        }
        for key in JSON_COLUMNS:
            flat[key] = json.dumps(flat[key], sort_keys=True)
        yield {key: flat[key] for key in COLUMNS}


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([(k, getattr(pa, t)()) for k, (_, t) in COLUMNS.items()])


def write_export(rows: Iterable[Mapping[str, Any]], out: str | Path, fmt: str | None = None) -> int:
    """Write rows as JSONL or Parquet (`fmt`, else from the suffix); returns the row count."""
    out = Path(out)
    fmt = fmt or ("parquet" if out.suffix == ".parquet" else "jsonl")
    rows = list(rows)
    if fmt not in ("parquet", "jsonl"):
        raise ValueError(f"unknown export format {fmt!r} (parquet or jsonl)")
    with atomic_path(out) as tmp:
        if fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pylist(rows, schema=_arrow_schema()), tmp)
        else:
            with open(tmp, "w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


def read_export(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL or Parquet file (by suffix), as written (JSON columns still strings)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_table(path).to_pylist())
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError(f"{path}:{number}: expected a JSON object per line")
                rows.append(row)
    return rows


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One environment offered for import: the program, where it came from, and the
    exported fields the pool would otherwise drop (empty for a .py file)."""

    program: Program
    origin: str
    """File, or `file#row` for a row of an export."""
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    sha256: str | None = None
    """The row's `sha256` of the code, checked on import."""


def _decoded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def candidate_from_row(row: Mapping[str, Any], origin: str) -> Candidate:
    """A row of our export (or any table with at least a `code` column)."""
    code = row.get("code")
    if not isinstance(code, str):
        raise ValueError(f"{origin}: no `code` string")
    metadata = _decoded(row.get("metadata")) or {}
    program = Program(
        code=code,
        hint=row.get("hint") or "",
        skill=row.get("skill") or "",
        description=row.get("description") or "",
        metadata={str(k): str(v) for k, v in dict(metadata).items()},
        source=row.get("source") or "",
    )
    if not (program.skill and program.description):  # a table of bare code: read its header
        header = Program.from_code(code, source=program.source)
        program = dataclasses.replace(
            program,
            skill=program.skill or header.skill,
            hint=program.hint or header.hint,
            description=program.description or header.description,
            metadata=program.metadata or header.metadata,
        )
    extra = {k: _decoded(v) if k in JSON_COLUMNS else v for k, v in row.items() if k not in STORED}
    return Candidate(program, origin, extra, row.get("sha256"))


def read_source(src: str | Path) -> list[Candidate]:
    """A directory of environment files (reference `game_<iter>_<idx>_<skill>.py` names give
    the skill), one .py file, a .jsonl / .parquet export, or a directory exported as an
    OpenEnv, verifiers or GEM package (the environments its manifest lists; BundleError if a
    file changed since)."""
    from spade.envs.bundle import bundle_programs, bundles_under

    src = Path(src)
    if src.is_dir() and (bundles := bundles_under(src)):  # one of our packages
        return [Candidate(p, p.source) for b in bundles for p in bundle_programs(b)]
    if src.is_dir():
        files = sorted(p for p in src.rglob("*.py") if p.is_file())
        return [Candidate(Program.from_file(f), str(f)) for f in files]
    if src.suffix == ".py":
        return [Candidate(Program.from_file(src), str(src))]
    return [candidate_from_row(row, f"{src}#{i}") for i, row in enumerate(read_export(src))]


def check_skill(program: Program) -> CheckFailure | None:
    if program.skill.strip():
        return None
    return CheckFailure(
        "skill",
        "no skill: name the file game_<iter>_<idx>_<skill_slug>.py or add a `skill:` line "
        "to the module docstring",
    )


def check_sha256(candidate: Candidate) -> CheckFailure | None:
    expected = candidate.sha256
    actual = hashlib.sha256(candidate.program.code.encode("utf-8", "surrogatepass")).hexdigest()
    if expected is None or expected == actual:
        return None
    return CheckFailure("sha256", f"the code hashes to {actual[:12]}, the row says {expected[:12]}")


@dataclasses.dataclass(frozen=True)
class ImportResult:
    candidate: Candidate
    verdict: Verdict
    added: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.candidate.origin,
            "skill": self.candidate.program.skill,
            "added": self.added,
            **self.verdict.to_json(),
        }


async def import_candidates(
    candidates: Sequence[Candidate],
    pool: Pool,
    sandbox: SandboxAPI,
    cfg: ValidatorConfig | None = None,
    *,
    iteration: int = 0,
    concurrency: int = 4,
    on_result: Callable[[ImportResult], None] | None = None,
) -> list[ImportResult]:
    """Validate each candidate (against the pool's admitted programs for duplicates) and add the
    admitted ones at `iteration`. A candidate without a skill, or whose code does not match its
    row's sha256, is rejected before it reaches the sandbox."""
    from spade.envs.validate import validate_many

    early: dict[int, Verdict] = {}
    for i, c in enumerate(candidates):
        failure = check_skill(c.program) or check_sha256(c)
        if failure is not None:
            early[i] = Verdict(c.program.env_id, False, (failure,))
    todo = [i for i in range(len(candidates)) if i not in early]
    results: dict[int, ImportResult] = {}
    emitted = 0

    def record(i: int, verdict: Verdict) -> None:
        nonlocal emitted
        c, added = candidates[i], False
        if verdict.admitted:
            provenance = {"imported_from": c.origin, "origin": dict(c.extra)}
            added = pool.add_program(c.program, verdict, iteration, provenance)
            if not added:  # already stored (e.g. as a rejected program): not a new environment
                failure = CheckFailure("duplicate", f"{verdict.env_id[:12]} is already in the pool")
                verdict = dataclasses.replace(verdict, admitted=False, failures=(failure,))
        results[i] = ImportResult(c, verdict, added)
        while on_result is not None and emitted in results:  # report in input order
            on_result(results[emitted])
            emitted += 1

    for i, verdict in early.items():
        record(i, verdict)
    await validate_many(
        [candidates[i].program for i in todo],
        sandbox,
        cfg,
        pool.admitted(),
        concurrency,
        lambda j, verdict: record(todo[j], verdict),
    )
    return [results[i] for i in range(len(candidates))]
