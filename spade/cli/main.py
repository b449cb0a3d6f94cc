"""The `spade` command line: train, design, eval, bootstrap, validate, play, seeds, doctor, report,
pool, experiment.

Each subcommand is a function whose signature tyro turns into flags; heavy libraries (torch,
transformers) are never imported here, so `spade --help` and `spade validate` start quickly.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from spade.cli.experiment_command import experiment
from spade.cli.paths import environment_files
from spade.cli.pool_commands import pool, report
from spade.types import Program

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


def _usage_error(message: str) -> int:
    print(f"spade: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def validate(
    paths: Annotated[list[Path], tyro.conf.Positional],
    /,
    json_lines: Annotated[bool, tyro.conf.arg(name="json")] = False,
    pool: list[Path] = [],  # noqa: B006 - tyro reads the default
    concurrency: int = 4,
    probe_seeds: int = 8,
    sandbox: Literal["local", "ray"] = "local",
) -> int:
    """Validate environment files (or directories of them) in the sandbox.

    Exit status: 0 if every environment is admitted, 1 if any is rejected, 2 on usage errors.

    Args:
        paths: Environment files or directories (searched recursively for *.py).
        json_lines: Print exactly one JSON object per environment per line.
        pool: Files or directories of already-admitted environments to check duplicates against.
        concurrency: Environments validated at once.
        probe_seeds: Seeds each probe policy (empty, constant, random replies) plays.
        sandbox: Where the programs run: `local` (this host) or `ray` (the hosts of the Ray
            cluster at RAY_ADDRESS, or a local Ray; the `ray` extra).
    """
    from rich.console import Console
    from rich.progress import Progress

    from spade.envs.checks import ValidatorConfig, report_row
    from spade.envs.validate import validate_many
    from spade.exports.gem_import import sandbox_config_for
    from spade.sandbox import make_sandbox

    files = environment_files(paths)
    if isinstance(files, str):
        return _usage_error(files)
    pool_files = environment_files(pool) if pool else []
    if isinstance(pool_files, str):
        return _usage_error(f"--pool: {pool_files}")
    programs = [Program.from_file(f) for f in files]
    pool_programs = [Program.from_file(f) for f in pool_files]
    cfg = ValidatorConfig(probe_seeds=probe_seeds)
    console = Console(stderr=True)

    async def run() -> list[bool]:
        admitted: list[bool] = []
        config = sandbox_config_for(p.code for p in programs + pool_programs)
        envs = await make_sandbox(sandbox, config).start()
        try:
            with Progress(console=console, transient=True, disable=json_lines) as progress:
                task = progress.add_task("validating", total=len(programs))

                def report(i: int, verdict) -> None:  # type: ignore[no-untyped-def]
                    progress.advance(task)
                    admitted.append(verdict.admitted)
                    row = {"path": str(files[i]), "skill": programs[i].skill, **report_row(verdict)}
                    if json_lines:
                        print(json.dumps(row), flush=True)
                    else:
                        mark = "[green]admitted[/]" if verdict.admitted else "[red]rejected[/]"
                        progress.console.print(f"{mark} {files[i]}")
                        for f in verdict.failures:
                            progress.console.print(
                                f"    [yellow]{f.check}[/]: {f.reason}",
                                markup=True,
                                highlight=False,
                            )
                        for w in verdict.stats.get("warnings", ()):
                            progress.console.print(
                                f"    [dim]warning {w['check']}[/]: {w['reason']}",
                                markup=True,
                                highlight=False,
                            )

                await validate_many(programs, envs, cfg, pool_programs, concurrency, report)
        finally:
            await envs.aclose()
        return admitted

    admitted = asyncio.run(run())
    if not json_lines:
        console.print(f"{sum(admitted)} admitted, {len(admitted) - sum(admitted)} rejected")
    return EXIT_OK if all(admitted) else EXIT_REJECTED


def play(
    path: Annotated[Path, tyro.conf.Positional],
    /,
    seed: int = 0,
    hint: str | None = None,
    actions: Path | None = None,
    difficulty: int | None = None,
    max_turns: int = 25,
) -> int:
    """Play an environment in the terminal, inside the sandbox.

    Type one reply per turn (for games, `\\boxed{...}` is the action); an empty line or EOF ends.

    Args:
        path: The environment file.
        seed: Episode seed passed to reset().
        hint: Text appended to the first observation as "HINT: ...".
        actions: Replay replies from a file instead of the keyboard: one reply per line, or a
            JSON list of strings when the file ends in .json.
        difficulty: Passed to the constructor as `difficulty=` (seed environments take 1-3).
        max_turns: Turn cap of the episode.
    """
    from rich.console import Console

    from spade.envs.episode import to_action
    from spade.sandbox import Sandbox, SandboxError

    if not path.is_file():
        return _usage_error(f"no such file: {path}")
    scripted = _scripted_replies(actions) if actions is not None else None
    if isinstance(scripted, str):
        return _usage_error(scripted)
    console = Console(highlight=False)
    kwargs = {} if difficulty is None else {"difficulty": difficulty}

    async def run() -> int:
        async with Sandbox() as sandbox:
            try:
                session = await sandbox.open(
                    path.read_text(), max_turns=max_turns, kwargs=kwargs, filename=str(path)
                )
                obs, _ = await session.reset(seed)
            except SandboxError as err:
                console.print(f"[red]cannot start the environment[/]: {err.message}")
                return EXIT_REJECTED
            if hint:
                obs = f"{obs}\n\nHINT: {hint}"
            console.rule(f"{session.info.class_name if session.info else path.name}  seed {seed}")
            console.print(obs, markup=False)
            reward, terminated, truncated, turn = 0.0, False, False, 0
            while turn < max_turns and not (terminated or truncated):
                reply = _next_reply(scripted, turn, console)
                if reply is None:
                    break
                turn += 1
                try:
                    result = await session.step(to_action(session, reply))
                except SandboxError as err:
                    console.print(f"[red]environment error[/]: {err.message}")
                    await session.close()
                    return EXIT_REJECTED
                reward, terminated, truncated = result.reward, result.terminated, result.truncated
                console.rule(f"turn {turn}/{max_turns}  reward {reward:g}", style="dim")
                console.print(result.observation, markup=False)
            await session.close()
        console.rule(_episode_line(reward, terminated, truncated or turn >= max_turns, turn))
        return EXIT_OK

    return asyncio.run(run())


def _scripted_replies(actions: Path) -> list[str] | str:
    """`spade play --actions FILE`: one reply per non-empty line, or a JSON list of strings
    (`.json`); a string is the usage error."""
    if not actions.is_file():
        return f"no such file: {actions}"
    text = actions.read_text()
    if actions.suffix != ".json":
        return [line for line in text.splitlines() if line.strip()]
    replies = json.loads(text)
    if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
        return f"{actions}: expected a JSON list of strings"
    return replies


def _next_reply(scripted: list[str] | None, turn: int, console: Any) -> str | None:
    """The reply of `turn`: from the script (echoed), else typed; None ends the episode (script
    or input exhausted, or an empty line)."""
    from rich.markup import escape

    if scripted is not None:
        if turn >= len(scripted):
            return None
        console.print(f"[cyan]> {escape(scripted[turn])}[/]")
        return scripted[turn]
    try:
        reply = input("> ")
    except EOFError:
        return None
    return reply if reply.strip() else None


def _episode_line(reward: float, terminated: bool, truncated: bool, turns: int) -> str:
    ret = max(-1.0, min(1.0, reward)) if terminated else 0.0
    ending = "terminated" if terminated else "truncated" if truncated else "stopped"
    return (
        f"episode {ending} after {turns} turns: return {ret:g} ({'win' if ret > 0 else 'no win'})"
    )


def doctor(require_full: bool = False, sandbox: Literal["local", "ray"] = "local") -> int:
    """Report which sandbox isolation layers are active on this host (or on every host of the
    Ray cluster), and why any is missing.

    Args:
        require_full: Exit with status 1 unless every layer is active (on every host).
        sandbox: `local` (this host) or `ray` (every node of the Ray cluster at RAY_ADDRESS, or
            a local Ray; the `ray` extra).
    """
    import dataclasses
    import platform

    from rich.console import Console
    from rich.table import Table

    from spade.sandbox import SandboxConfig, make_sandbox
    from spade.sandbox.isolation import landlock_abi

    async def run() -> tuple[dict[str, dict[str, str | None]], dict[str, str]]:
        # a Ray host lacking a layer is refused only with --require-full; it is reported here
        envs: Any = make_sandbox(sandbox, dataclasses.replace(SandboxConfig(), warm_workers=0))
        await envs.start()
        try:
            if sandbox == "ray":
                return {h.name: dict(h.layers) for h in envs.hosts}, dict(envs.refused)
            return {"this host": dict(envs.layers)}, {}
        finally:
            await envs.aclose()

    hosts, refused = asyncio.run(run())
    console = Console()
    missing_any = False
    for host, layers in hosts.items():
        table = Table(title=f"spade sandbox isolation layers: {host}")
        table.add_column("layer")
        table.add_column("status")
        table.add_column("detail")
        for name, reason in layers.items():
            table.add_row(
                name, "[green]active[/]" if reason is None else "[red]missing[/]", reason or ""
            )
        console.print(table)
        missing = [k for k, v in layers.items() if v is not None]
        if missing:
            missing_any = True
            console.print(
                f"[yellow]{host}: {len(missing)} layer(s) missing[/]: {', '.join(missing)}"
            )
    for host, why in refused.items():
        console.print(f"[red]{host}: no sandbox started[/]: {why}")
    console.print(
        f"python {platform.python_version()} on {platform.platform()}; "
        f"Landlock ABI {landlock_abi()}"
    )
    console.print(_model_line())
    return EXIT_REJECTED if ((missing_any or refused) and require_full) else EXIT_OK


def _model_line() -> str:
    """Which precision the local backend picks here, and whether the default model is cached."""
    try:
        import torch
    except ImportError:
        return "model backend: torch is not installed (pip install 'spade-rl[torch]')"
    from spade.backends.smollm import SMOLLM2, cached_model_path
    from spade.backends.torch_setup import cpu_has_native_bf16, resolve_device, resolve_precision

    device = resolve_device("auto")
    precision = resolve_precision("auto", device)
    bf16 = "native bf16 (AVX512-BF16/AMX)" if cpu_has_native_bf16() else "no native bf16"
    cached = cached_model_path(SMOLLM2)
    where = f"cached at {cached}" if cached else "not cached yet (fetched on first use)"
    return (
        f"model backend: torch {torch.__version__}, device {device}, CPU {bf16}: "
        f"precision auto = {precision}; default model {SMOLLM2.name} {where}"
    )


async def solution_lengths(
    sandbox: Any, programs: Any, seeds: int = 5
) -> dict[str, dict[int, float]]:
    """env_id -> difficulty level -> median length of `solution()` over seeds 0..seeds-1 (a level
    stops at its first failing seed). Every session opened is closed, whatever it raised."""
    import statistics

    from spade.sandbox import SandboxError

    lengths: dict[str, dict[int, float]] = {}
    for program in programs:
        per_level: dict[int, float] = {}
        for level in program.difficulty_levels() or (0,):
            kwargs = {"difficulty": level} if level else {}
            counts = []
            for seed in range(seeds):
                try:
                    session = await sandbox.open(program.code, kwargs=kwargs)
                except SandboxError:
                    break
                try:
                    await session.reset(seed)
                    solution = await session.solution()
                except SandboxError:
                    break
                finally:
                    await session.close()
                if isinstance(solution, list):
                    counts.append(len(solution))
            if counts:
                per_level[level] = statistics.median(counts)
        lengths[program.env_id] = per_level
    return lengths


def seeds(
    heldout: bool = False,
    measure: bool = False,
    json_lines: Annotated[bool, tyro.conf.arg(name="json")] = False,
) -> int:
    """List the bundled environments with skill, difficulty range and turn profile.

    Args:
        heldout: List the held-out evaluation environments instead of the seeds.
        measure: Play each `solution()` in the sandbox (seeds 0-4) and report its median length
            per difficulty level.
        json_lines: One JSON object per environment per line.
    """
    from rich.console import Console
    from rich.table import Table

    from spade.envs import bundled
    from spade.sandbox import Sandbox

    programs = bundled.heldout_programs() if heldout else bundled.seed_programs()
    lengths: dict[str, dict[int, float]] = {}

    async def measure_all() -> None:
        async with Sandbox() as sandbox:
            lengths.update(await solution_lengths(sandbox, programs))

    if measure:
        asyncio.run(measure_all())
    rows: list[dict[str, Any]] = []
    for program in programs:
        levels = program.difficulty_levels()
        rows.append(
            {
                "path": str(Path(program.source).relative_to(bundled.ROOT)),
                "skill": program.skill,
                "difficulty": f"{levels[0]}-{levels[-1]}" if levels else "",
                "turns": program.metadata.get("turns", ""),
                "description": program.description,
                "env_id": program.env_id,
                **({"solution_length": lengths.get(program.env_id, {})} if measure else {}),
            }
        )
    if json_lines:
        for row in rows:
            print(json.dumps(row))
        return EXIT_OK
    table = Table(title=f"bundled {'held-out' if heldout else 'seed'} environments ({len(rows)})")
    for column in ("skill", "difficulty", "turns", "solution length" if measure else None):
        if column:
            table.add_column(column)
    table.add_column("file / description")
    for row in rows:
        sol = row.get("solution_length")
        cells = [row["skill"], row["difficulty"], row["turns"]]
        if measure:
            cells.append(" / ".join(f"{v:g}" for v in sol.values()) if sol else "-")
        table.add_row(*cells, f"{Path(row['path']).name}\n[dim]{row['description']}[/]")
    Console().print(table)
    return EXIT_OK


def _model_command(name: str) -> Callable[..., int]:
    def stub(*args: object, **kwargs: object) -> int:
        raise AssertionError("dispatched by main()")

    stub.__doc__ = MODEL_COMMANDS[name]
    return stub


MODEL_COMMANDS = {
    "train": "Run SPADE self-play (default: the embedded SmolLM2-135M-Instruct on this machine). "
    "`spade train --help` lists every option.",
    "design": "Synthesise and validate a pool of environments with any backend, no training.",
    "eval": "Play environments (default: the held-out set) with a policy; win rates with CIs.",
    "bootstrap": "Warm-start a model on template environments (cached), and measure it.",
    "untie": "Copy a model with its own LM head, for vLLM weight sync (docs/scale.md).",
}


COMMANDS: dict[str, Callable[..., int]] = {
    "validate": validate,
    "play": play,
    "doctor": doctor,
    "seeds": seeds,
    "report": report,
    "pool": pool,
    "experiment": experiment,
    **{name: _model_command(name) for name in MODEL_COMMANDS},
}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in MODEL_COMMANDS:  # these import torch: loaded only when used
        from spade.cli.model_commands import run

        return run(args[0], args[1:])
    try:
        result = tyro.extras.subcommand_cli_from_dict(COMMANDS, args=args, prog="spade")  # type: ignore[arg-type]
    except BrokenPipeError:  # `spade ... | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
