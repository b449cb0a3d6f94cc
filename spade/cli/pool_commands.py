"""`spade report` and `spade pool ls | show | export | import`: look at a run and move its pool.

Kept import-light like spade/cli/main.py: matplotlib, pyarrow and the sandbox load inside the
commands, so `spade --help` stays fast. POOL is a run directory or a pool.sqlite path; reading
commands open it read-only, so they are safe while a run is writing it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from spade.types import Band

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2
SortKey = Literal["win_rate", "regret", "iteration", "plays"]


def _usage_error(message: str) -> int:
    print(f"spade: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def report(
    run_dir: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")],
    /,
    out: Path | None = None,
    top: int = 10,
) -> int:
    """Plot a run directory into one self-contained HTML report (plus the PNGs), or an
    experiment directory (`spade experiment`) into its comparison figure and tables.

    Works while the run is still going (the pool is opened read-only).

    Args:
        run_dir: The run directory (config.json, pool.sqlite, metrics.jsonl, eval.json), or an
            experiment directory (plan.json, one run directory per arm and seed).
        out: Output directory (default: RUN_DIR/report).
        top: Environments listed in the top-by-regret table.
    """
    from spade.envs.pool_schema import PoolSchemaError
    from spade.report.html import build_report

    try:
        import matplotlib  # noqa: F401 - an optional extra
    except ImportError:
        return _usage_error("`spade report` needs matplotlib: pip install 'spade-rl[report]'")
    started = time.perf_counter()
    if (run_dir / "plan.json").exists():
        from spade.report.experiment import build_report as build_experiment_report

        try:
            path = build_experiment_report(run_dir, out)
        except FileNotFoundError as err:
            return _usage_error(str(err))
        print(f"wrote {path} in {time.perf_counter() - started:.1f} s")
        return EXIT_OK
    try:
        path = build_report(run_dir, out, top)
    except (FileNotFoundError, PoolSchemaError) as err:
        return _usage_error(str(err))
    print(f"wrote {path} in {time.perf_counter() - started:.1f} s")
    return EXIT_OK


# --- spade pool -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Ls:
    """List the environments of a pool, one row each, with play statistics."""

    pool: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="POOL")]
    """Run directory or pool.sqlite."""
    skill: str | None = None
    """Only this skill (case-insensitive; `logical_deduction` works too)."""
    band: Band | None = None
    """Only this band of plain win rate w: frontier 0.2-0.8, mastered > 0.8, out_of_reach < 0.2."""
    admitted: bool = False
    """Only admitted environments."""
    rejected: bool = False
    """Only rejected environments."""
    iteration: int | None = None
    """Only environments created in this iteration (0: seeds and imports)."""
    sort: SortKey = "iteration"
    """Order: iteration ascending; win_rate, regret and plays descending (missing values last)."""
    reverse: bool = False
    """Reverse the order."""
    limit: int | None = None
    """Show at most this many rows."""
    json_lines: Annotated[bool, tyro.conf.arg(name="json")] = False
    """One JSON object (an export row without code) per line."""


@dataclasses.dataclass(frozen=True)
class Show:
    """Show one environment: code, hint, verdict, and its play history per iteration."""

    pool: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="POOL")]
    """Run directory or pool.sqlite."""
    env_id: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="ENV_ID")]
    """env_id or a unique prefix of it."""


@dataclasses.dataclass(frozen=True)
class Export:
    """Write the pool as a table (one row per environment: code, env_id, sha256, skill, hint,
    verdict, win rates, regret, provenance; JSONL or Parquet, loadable with
    `datasets.load_dataset`), or its admitted environments as a package another trainer loads:
    `--format openenv` (an OpenEnv environment: manifest, server, client), `verifiers` (a
    verifiers.v1 taskset package) or `gem` (a package registering GEM ids). The packages play
    the programs in spade's sandbox, never in the trainer's interpreter (docs/exports.md)."""

    pool: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="POOL")]
    """Run directory or pool.sqlite."""
    out: Path
    """Output file (table formats) or directory (openenv, verifiers, gem)."""
    format: Literal["parquet", "jsonl", "openenv", "verifiers", "gem"] | None = None
    """Format (default: from the suffix of --out, parquet or jsonl; Parquet needs pyarrow)."""
    admitted_only: bool = False
    """Leave out rejected programs (always, for the package formats)."""
    name: str | None = None
    """Package name for openenv, verifiers and gem (default: from the --out directory's name)."""
    max_turns: int = 25
    """Turn cap of an episode in the package formats (a game's own lower cap still applies)."""


@dataclasses.dataclass(frozen=True)
class Import:
    """Validate environments in the sandbox and add the admitted ones to a pool.

    SRC is a directory of environment files (reference names game_<iter>_<idx>_<skill>.py give
    the skill), one .py file (a GEM environment file too), a .jsonl / .parquet export, a package
    written by `spade pool export --format`, or `gem:<id>` for a registered GEM environment
    (docs/exports.md). Exit status 1 if any is rejected."""

    src: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="SRC")]
    """Directory, .py file, export file, exported package, or gem:<id>."""
    into: Path
    """Run directory or pool.sqlite to add to (created if missing)."""
    iteration: int = 0
    """Creation iteration recorded for the imported environments."""
    json_lines: Annotated[bool, tyro.conf.arg(name="json")] = False
    """Print exactly one JSON object per environment per line."""
    concurrency: int = 4
    """Environments validated at once."""
    probe_seeds: int = 8
    """Seeds each probe policy (empty, constant, random replies) plays."""
    skill: str | None = None
    """Skill of the environments that name none (GEM environments do not)."""


def pool(
    command: Annotated[
        Annotated[Ls, tyro.conf.subcommand("ls", prefix_name=False)]
        | Annotated[Show, tyro.conf.subcommand("show", prefix_name=False)]
        | Annotated[Export, tyro.conf.subcommand("export", prefix_name=False)]
        | Annotated[Import, tyro.conf.subcommand("import", prefix_name=False)],
        tyro.conf.arg(name=""),
    ],
) -> int:
    """Inspect, export and import environment pools (`spade pool ls --help`)."""
    from spade.envs.pool_schema import PoolSchemaError

    try:
        if isinstance(command, Ls):
            return pool_ls(command)
        if isinstance(command, Show):
            return pool_show(command)
        if isinstance(command, Export):
            return pool_export(command)
        return pool_import(command)
    except (FileNotFoundError, PoolSchemaError) as err:
        return _usage_error(str(err))


def _matches_skill(skill: str, wanted: str) -> bool:
    from spade.types import skill_slug

    return skill_slug(skill) == skill_slug(wanted)


def _sorted(rows: list[dict[str, Any]], key: SortKey, reverse: bool) -> list[dict[str, Any]]:
    if key == "iteration":
        out = sorted(rows, key=lambda r: r["created_iteration"])  # stable: insertion order
    else:
        out = sorted(rows, key=lambda r: (r[key] is None, -(r[key] or 0)))  # columns of that name
    return out[::-1] if reverse else out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def pool_ls(cmd: Ls) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from spade.envs.pool_io import ReadOnlyPool, export_rows

    if cmd.admitted and cmd.rejected:
        return _usage_error("--admitted and --rejected exclude each other")
    with ReadOnlyPool(cmd.pool) as p:
        rows = [
            r
            for r in export_rows(p)
            if (cmd.skill is None or _matches_skill(r["skill"], cmd.skill))
            and (cmd.band is None or r["band"] == cmd.band)
            and (not cmd.admitted or r["admitted"])
            and (not cmd.rejected or not r["admitted"])
            and (cmd.iteration is None or r["created_iteration"] == cmd.iteration)
        ]
    rows = _sorted(rows, cmd.sort, cmd.reverse)[: cmd.limit]
    if cmd.json_lines:
        for r in rows:
            print(json.dumps({k: v for k, v in r.items() if k != "code"}))
        return EXIT_OK
    table = Table(title=f"{len(rows)} environments in {cmd.pool}", title_justify="left")
    for column in ("env_id", "iter", "skill", "status", "band", "plays", "win", "hinted"):
        table.add_column(column, justify="right" if column in ("iter", "plays") else "left")
    table.add_column("regret", justify="right")
    table.add_column("description", overflow="fold")
    for r in rows:
        failures = json.loads(r["verdict"]).get("failures", [])
        status = "[green]admitted[/]" if r["admitted"] else "[red]rejected[/]"
        if failures and not r["admitted"]:
            status += f" [dim]({escape(failures[0]['check'])})[/]"
        table.add_row(
            r["env_id"][:12],
            str(r["created_iteration"]),
            escape(r["skill"]),
            status,
            (r["band"] or "-").replace("_", " "),
            str(r["plays"]),
            _fmt(r["win_rate"]),
            _fmt(r["hinted_win_rate"]),
            _fmt(r["regret"]),
            escape(r["description"]),
        )
    Console().print(table)
    return EXIT_OK


def pool_show(cmd: Show) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.syntax import Syntax
    from rich.table import Table

    from spade.envs.pool_io import ReadOnlyPool, export_rows

    with ReadOnlyPool(cmd.pool) as p:
        found = p.find(cmd.env_id)
        if len(found) != 1:
            what = "no environment" if not found else f"{len(found)}+ environments"
            return _usage_error(f"{what} in {cmd.pool} with env_id starting {cmd.env_id!r}")
        env_id = found[0]
        row = next(r for r in export_rows(p) if r["env_id"] == env_id)
        history, rewards = p.play_history(env_id), p.designer_rewards(env_id)
    console = Console(highlight=False)
    verdict, provenance = json.loads(row["verdict"]), json.loads(row["provenance"])
    status = "[green]admitted[/]" if row["admitted"] else "[red]rejected[/]"
    console.rule(f"{env_id[:12]}  {escape(row['skill'])}")
    console.print(f"[bold]env_id[/]      {env_id}")
    console.print(f"[bold]description[/] {escape(row['description'])}")
    console.print(
        f"[bold]source[/]      {escape(row['source'])}   created {row['created_iteration']}"
    )
    console.print(f"[bold]verdict[/]     {status}  {escape(json.dumps(verdict.get('stats', {})))}")
    for failure in verdict.get("failures", []):
        console.print(f"    [yellow]{escape(failure['check'])}[/]: {escape(failure['reason'])}")
    console.print(f"[bold]provenance[/]  {escape(json.dumps(provenance))}")
    console.print(f"[bold]hint[/]        {escape(row['hint']) or '[dim]none[/]'}")
    console.print(
        f"[bold]plays[/]       {row['plays']} plain (win {_fmt(row['win_rate'])}, band "
        f"{row['band'] or '-'}), {row['hinted_plays']} hinted (win {_fmt(row['hinted_win_rate'])})"
    )
    if history:
        table = Table(title="play history", title_justify="left")
        for column in ("iteration", "arm", "plays", "wins", "win rate", "mean return", "turns"):
            table.add_column(column, justify="left" if column == "arm" else "right")
        for h in history:
            table.add_row(
                str(h["iteration"]),
                "hinted" if h["hinted"] else "plain",
                str(h["plays"]),
                str(h["wins"]),
                _fmt(h["wins"] / h["plays"]),
                f"{h['mean_return']:+.2f}",
                f"{h['mean_turns']:.1f}",
            )
        console.print(table)
    for d in rewards:
        gate = "passed" if d["hint_ok"] else f"gated out ({escape(d['hint_reason'] or '')})"
        console.print(
            f"designer reward {d['reward']:+.3f} at iteration {d['iteration']} (regen "
            f"{d['regen']}): regret {_fmt(d['regret'])}, win rate {d['win_rate']:.2f}, hint {gate}"
        )
    console.print(Syntax(row["code"], "python", line_numbers=True, word_wrap=True))
    return EXIT_OK


def pool_export(cmd: Export) -> int:
    from spade.envs.pool_io import ReadOnlyPool, export_rows, write_export

    if cmd.format in ("openenv", "verifiers", "gem"):
        return _export_package(cmd, cmd.format)
    fmt = cmd.format or ("parquet" if cmd.out.suffix == ".parquet" else "jsonl")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            return _usage_error("Parquet export needs pyarrow: pip install 'spade-rl[hf]'")
    with ReadOnlyPool(cmd.pool) as p:
        count = write_export(export_rows(p, cmd.admitted_only), cmd.out, fmt)
    print(f"wrote {count} environments to {cmd.out} ({fmt})", file=sys.stderr)
    return EXIT_OK


def _export_package(cmd: Export, fmt: Literal["openenv", "verifiers", "gem"]) -> int:
    from spade.envs.bundle import package_name
    from spade.envs.pool_io import ReadOnlyPool, export_rows
    from spade.exports import BundleError, export
    from spade.types import Program

    if cmd.out.exists() and not cmd.out.is_dir():
        return _usage_error(f"--out {cmd.out} is a file: the {fmt} format writes a directory")
    with ReadOnlyPool(cmd.pool) as p:
        programs = [
            Program.from_code(r["code"], source=r["source"], hint=r["hint"], skill=r["skill"])
            for r in export_rows(p, admitted_only=True)
        ]
    try:
        bundle = export(programs, cmd.out, fmt, cmd.name or package_name(cmd.out), cmd.max_turns)
    except BundleError as err:
        return _usage_error(str(err))
    print(
        f"wrote {len(programs)} environments to {cmd.out} ({fmt}; bundle in {bundle})",
        file=sys.stderr,
    )
    return EXIT_OK


def pool_import(cmd: Import) -> int:
    import asyncio

    from rich.console import Console
    from rich.markup import escape

    from spade.envs.checks import ValidatorConfig
    from spade.envs.pool import Pool
    from spade.envs.pool_io import ImportResult, import_candidates, pool_path, read_source
    from spade.exports.gem_import import sandbox_config_for
    from spade.sandbox import Sandbox

    gem_id = str(cmd.src)[4:] if str(cmd.src).startswith("gem:") else None
    if gem_id is None and not cmd.src.exists():
        return _usage_error(f"no such file or directory: {cmd.src}")
    if cmd.src.suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            return _usage_error("reading Parquet needs pyarrow: pip install 'spade-rl[hf]'")
    try:
        if gem_id is not None:
            from spade.envs.pool_io import Candidate
            from spade.exports.gem_import import gem_id_program

            candidates = [Candidate(gem_id_program(gem_id, cmd.skill or ""), str(cmd.src))]
        else:
            candidates = read_source(cmd.src)
    except ValueError as err:  # not JSON Lines / Parquet, a row without code, an unknown id
        return _usage_error(f"{cmd.src}: {err}")
    if not candidates:
        return _usage_error(f"no environments in {cmd.src}")
    if cmd.skill:
        candidates = [
            c
            if c.program.skill
            else dataclasses.replace(c, program=dataclasses.replace(c.program, skill=cmd.skill))
            for c in candidates
        ]
    console = Console(stderr=True, highlight=False)

    def show(result: ImportResult) -> None:
        if cmd.json_lines:
            print(json.dumps(result.to_json()), flush=True)
            return
        mark = "[green]added[/]" if result.added else "[red]rejected[/]"
        skill = escape(result.candidate.program.skill or "?")
        console.print(f"{mark} {escape(result.candidate.origin)} [dim]{skill}[/]")
        for f in result.verdict.failures:
            console.print(f"    [yellow]{escape(f.check)}[/]: {escape(f.reason)}")

    async def run() -> list[ImportResult]:
        with Pool(pool_path(cmd.into)) as target:
            config = sandbox_config_for(c.program.code for c in candidates)
            async with Sandbox(config) as sandbox:
                return await import_candidates(
                    candidates,
                    target,
                    sandbox,
                    ValidatorConfig(probe_seeds=cmd.probe_seeds),
                    iteration=cmd.iteration,
                    concurrency=cmd.concurrency,
                    on_result=show,
                )

    results = asyncio.run(run())
    added = sum(r.added for r in results)
    if not cmd.json_lines:
        console.print(f"{added} added to {pool_path(cmd.into)}, {len(results) - added} rejected")
    return EXIT_OK if added == len(results) else EXIT_REJECTED
