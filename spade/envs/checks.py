"""What the validator checks: its settings (`ValidatorConfig`), the stable name of every check a
verdict can carry (`CHECKS`, with its OpenEnv RFC 008 counterpart), the verdict's report row, and
the static checks, which read the code without running it (size, parse, one environment class).

The near-duplicate measure is `spade.envs.duplicates`, the checks that run the program
`spade.envs.sandboxed_checks`, and `spade.envs.validate` runs them all into a Verdict.
"""

from __future__ import annotations

import ast
import dataclasses
import warnings
from typing import Any

from spade.sandbox.runtime import env_class_names
from spade.types import CheckFailure, Program, Verdict


@dataclasses.dataclass(frozen=True)
class ValidatorConfig:
    """The validator's limits, seeds and thresholds (a docstring per field)."""

    max_code_bytes: int = 64_000
    """Largest accepted program (bytes of UTF-8)."""
    max_turns: int = 25
    """Turn cap of every validation episode (the runtime truncates there)."""
    probe_seeds: int = 8
    """Seeds each probe policy plays."""
    max_probe_win_rate: float = 0.25
    """A probe policy winning more often than this makes the program trivially solvable."""
    solution_seeds: int = 4
    """Seeds on which a replayable `solution()` must win, at every declared difficulty."""
    determinism_seeds: tuple[int, ...] = (3, 7)
    """Seeds replayed in two fresh interpreters that must produce identical transcripts."""
    hash_seeds: tuple[int, int] = (1, 2)
    """PYTHONHASHSEED of the two fresh interpreters."""
    near_duplicate_threshold: float = 0.9
    """Jaccard similarity of token 5-gram sets at or above which a program is a near-duplicate."""
    copy_seeds: tuple[int, int] = (16, 64)
    """Seeds each copy rule plays: the first number for every rule, the second for a rule that
    won more than `max_copy_win_rate` of them (so a shuffled two-option question, which a fixed
    position wins half the time, is rejected by chance about once in 50,000 rules)."""
    max_copy_win_rate: float = 0.75
    """A copy rule (`spade.envs.probes.copy_probes`) winning more often than this means the
    environment shows its answer. Above `max_probe_win_rate`: an honest question may name its
    options, and a fixed position then wins about half the time."""
    copy_turns: int = 4
    """Turn cap of a copy episode (a leak in the feedback shows from the second turn)."""


CHECKS: dict[str, str | None] = {
    "size": None,
    "parse": None,
    "env_class": None,
    "duplicate": None,
    "near_duplicate": None,
    "load": None,
    "contract": None,
    "exception": None,
    "resource": None,
    "not_trivial": None,
    "answer_leak": "semantic.no_solution_leakage",
    "seed_used": None,
    "solvable": "semantic.oracle_max",
    "termination": None,
    "determinism": "runtime.episode_determinism",
    "solution_replay": None,  # a warning only: solution() is not replayable, solvable skipped
}
"""Every check name a verdict can carry (stable: they appear in `spade validate --json`, the pool
and the Designer's failure counts), with the check of OpenEnv's validation proposal (RFC 008)
it corresponds to, where one does (docs/environments.md). `seed_used` is a warning instead of an
error when there is no `solution()` to tell a hidden secret from a fixed task."""


def report_row(verdict: Verdict) -> dict[str, Any]:
    """`verdict.to_json()` with a `checks` list: each failure (severity `error`: it rejects) and
    each warning (severity `warning`: it does not), with its RFC 008 counterpart."""
    rows = [
        {"check": f.check, "severity": "error", "rfc008": CHECKS.get(f.check), "reason": f.reason}
        for f in verdict.failures
    ]
    rows += [
        {
            "check": w["check"],
            "severity": "warning",
            "rfc008": CHECKS.get(w["check"]),
            "reason": w["reason"],
        }
        for w in verdict.stats.get("warnings", ())
    ]
    return {**verdict.to_json(), "checks": rows}


def check_size(program: Program, cfg: ValidatorConfig) -> CheckFailure | None:
    size = len(program.code.encode("utf-8", "replace"))
    if size == 0 or not program.code.strip():
        return CheckFailure("size", "the program is empty")
    if size > cfg.max_code_bytes:
        return CheckFailure("size", f"{size} bytes exceeds the {cfg.max_code_bytes}-byte limit")
    return None


def check_parse(program: Program, cfg: ValidatorConfig) -> CheckFailure | None:
    try:
        with warnings.catch_warnings():  # the program's invalid escapes are not our warnings
            warnings.simplefilter("ignore")
            ast.parse(program.code)
    except SyntaxError as exc:
        return CheckFailure("parse", f"SyntaxError: {exc.msg} (line {exc.lineno})")
    except (ValueError, RecursionError, MemoryError) as exc:
        return CheckFailure("parse", f"{type(exc).__name__}: {exc}")
    return None


def check_env_class(program: Program, cfg: ValidatorConfig) -> CheckFailure | None:
    names = env_class_names(program.code)
    if not names:
        return CheckFailure("env_class", "no top-level class whose name ends in 'Env'")
    if len(names) > 1:
        return CheckFailure(
            "env_class",
            f"{len(names)} environment classes ({', '.join(names)}); expected exactly one",
        )
    return None


# Top-level statements (`random.seed(0)`, a print) are allowed, as in the reference: the file
# runs in the sandbox anyway, and the determinism check catches what they break.
STATIC_CHECKS = (check_size, check_parse, check_env_class)
