"""`spade eval`: play environments (files, the held-out set or a suite) with a policy, and the
policy the model commands sample with (`policy_for`, also `spade design`'s).

Imported only when a model command runs (the local backend pulls in torch).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro
from rich.console import Console
from rich.table import Table

from spade import config as config_io
from spade.backends.base import SamplingParams
from spade.cli.paths import environment_files
from spade.config import ModelConfig
from spade.envs import bundled
from spade.sandbox import SandboxConfig
from spade.types import Program

console = Console(highlight=False)


def eval_cmd(
    paths: Annotated[list[Path], tyro.conf.Positional] = [],  # noqa: B006 - tyro reads the default
    /,
    model: str = "smollm2",
    run_dir: Path | None = None,
    openai_base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    seeds: int = 4,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    temperature: float = 1.0,
    seed: int = 0,
    json_output: Annotated[bool, tyro.conf.arg(name="json")] = False,
    sandbox: Literal["local", "ray"] = "local",
    suite: str | None = None,
    level: int | None = None,
    limit: int = 10,
    policy: Literal["model", "solution"] = "model",
) -> int:
    """Play environments with a policy: win rate per skill and overall, with 95% intervals.

    Args:
        paths: Environment files or directories; default: the bundled held-out set.
        model: `smollm2` (the embedded default), `tiny-test`, a local checkpoint directory, a hub
            id, or the served model's name.
        run_dir: Evaluate the latest checkpoint of this training run (its Agent).
        openai_base_url: Sample from an OpenAI-compatible server instead of a local model.
        api_key_env: Environment variable with the server's key.
        seeds: Episodes per environment (seeds 0..N-1).
        max_turns: Turn cap per episode; default 8, or the suite's (its multi-turn
            environments cap themselves).
        max_tokens: Longest reply per turn; default 48, or the suite's (512 for humaneval,
            256 for bfcl, 64 otherwise).
        temperature: Sampling temperature.
        seed: Sampling seed.
        json_output: Print the result as one JSON object.
        sandbox: Where the environments run: `local` (this host) or `ray` (the hosts of the Ray
            cluster at RAY_ADDRESS, or a local Ray; the `ray` extra).
        suite: Evaluate on a suite instead of PATHS: `NAME[:SUBSET,...]`, e.g.
            `reasoning-gym:basic_arithmetic,chain_sum` (the `eval` extra; docs/evaluation.md).
        level: The suite's curriculum level (reasoning-gym); default: each subset's default.
        limit: Items per suite subset.
        policy: `model`, or `solution`: replay each environment's own `solution()` (a check
            that an adapter or a hand-written environment scores its known answer as a win).
    """
    chosen = _environments(paths, suite, limit, level, seed)
    if isinstance(chosen, str):
        console.print(f"spade eval: {chosen}")
        return 2
    programs, config, turns, tokens = chosen
    from spade.start_weights import OtherStartError

    try:
        agent = (
            None
            if policy == "solution"
            else policy_for(model, run_dir, openai_base_url, api_key_env, seed)
        )
    except OtherStartError as exc:
        console.print(f"spade eval: {exc}")
        return 2
    max_turns = turns if max_turns is None else max_turns
    max_tokens = tokens if max_tokens is None else max_tokens
    params = SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed)
    result = asyncio.run(_play(agent, sandbox, config, programs, seeds, params, max_turns))
    if json_output:
        print(json.dumps(result.to_json()))
        return 0
    _print_eval(result, f"win rate over {len(programs)} environments x {seeds} seeds", policy)
    return 0


def _environments(
    paths: list[Path], suite: str | None, limit: int, level: int | None, seed: int
) -> tuple[list[Program], SandboxConfig, int, int] | str:
    """What `spade eval` plays: (programs, sandbox config, default turn cap, default reply
    length) of the suite, the files under PATHS or the held-out set; a string is the usage
    error."""
    if suite is None:
        files = environment_files(paths) if paths else None
        if isinstance(files, str):
            return files
        programs = (
            bundled.heldout_programs() if files is None else [Program.from_file(f) for f in files]
        )
        return programs, SandboxConfig(), 8, 48
    if paths:
        return "give PATHS or --suite, not both"
    from spade.evals.suites import suite_budget, suite_programs, suite_sandbox_config

    try:
        found = suite_programs(suite, limit=limit, level=level, seed=seed)
        config = suite_sandbox_config(suite, SandboxConfig())
        turns, tokens = suite_budget(suite)
    except ValueError as exc:
        return str(exc)
    return found if isinstance(found, str) else (found, config, turns, tokens)


async def _play(
    agent: Any,
    sandbox: Literal["local", "ray"],
    config: SandboxConfig,
    programs: list[Program],
    seeds: int,
    params: SamplingParams,
    max_turns: int,
) -> Any:
    """Every program played on seeds 0..seeds-1 by `agent`, or by its own `solution()` when
    `agent` is None, in a sandbox started for the purpose."""
    from spade.evals.winrate import evaluate, evaluate_solutions
    from spade.sandbox import make_sandbox

    envs = await make_sandbox(sandbox, config).start()
    try:
        if agent is None:
            return await evaluate_solutions(envs, programs, seeds=range(seeds), max_turns=max_turns)
        return await evaluate(
            agent, envs, programs, seeds=range(seeds), params=params, max_turns=max_turns
        )
    finally:
        await envs.aclose()


def _print_eval(result: Any, title: str, policy: str) -> None:
    """The win-rate table of `spade eval` (per skill and overall, 95% Wilson intervals)."""
    table = Table(title=title)
    for column in ("skill", "wins", "episodes", "rate", "95% CI"):
        table.add_column(column)
    rows = sorted(result.by_skill.items()) + [("overall", result.overall)]
    for name, rate in rows:
        low, high = rate.interval
        table.add_row(
            name, str(rate.wins), str(rate.episodes), f"{rate.rate:.2f}", f"{low:.2f}-{high:.2f}"
        )
    console.print(table)
    if result.errors and policy == "solution":
        console.print(
            f"{result.errors} episodes had no replayable solution or ended with an environment "
            "error (losses)"
        )
    elif result.errors:
        console.print(f"{result.errors} episodes ended with an environment error (losses)")


def policy_for(
    model: str, run_dir: Path | None, base_url: str | None, key_env: str, seed: int
) -> Any:
    """The policy of a model command: the Agent of `run_dir`'s latest checkpoint, else `model`
    (local, or served at `base_url` with the key in `$key_env`). A checkpoint holds the trained
    parameters only: it is loaded over the weights the run started from (the warm start of its
    Designer form), and refused (OtherStartError) where this machine's are not the ones the run
    recorded."""
    from spade import start_weights
    from spade.selfplay.models import build_policy, local_backend, warm_started_model

    if run_dir is not None:
        cfg = config_io.load(run_dir / "config.json")
        state = json.loads((run_dir / "state.json").read_text())
        path = warm_started_model(cfg.model, cfg.design.form)
        start_weights.check(run_dir, start_weights.identity(path))
        backend = local_backend(cfg.model, path, cfg.seed, cfg.ppo)
        if state.get("checkpoint"):
            backend.load(run_dir / state["checkpoint"] / "agent")
        return backend
    return build_policy(
        ModelConfig(model=model, openai_base_url=base_url, openai_api_key_env=key_env), seed
    )
