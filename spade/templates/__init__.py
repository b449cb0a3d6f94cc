"""Parametric environment families: warm-start data for the embedded model, in two forms.

    from spade.templates import COMPACT_FAMILIES, FAMILIES, render, render_many
    program = render(random.Random(7))                    # one random family, one variant
    programs = render_many(3000, seed=0)                  # balanced over families, no repeats
    short = render_many(3000, seed=0, form="compact")     # the same families on the scaffolds

Each family is a pure function `render(rng) -> Rendered(code, hint, skill, family, form)`; the
same rng state gives the same program. There are 18 families, three per game skill, and each
comes in two forms (`Rendered.form`):

- "full" (`FAMILIES`, the default): a complete environment file in the format of the bundled
  seeds (docstring header with description, `skill:`, `hint:`, `difficulty: 1-3`, `turns:`; one
  `*Env` class with `__init__(max_turns=..., difficulty=2)`, `reset(seed)` on a local
  `random.Random(seed)`, `step` parsing `\\boxed{}`, and `solution()` returning the winning
  replies), about 2,200 characters. Every family varies its mechanics, feedback, win condition,
  names and parameters, and all families share a drawn `Style` (parsing helper, info dict,
  difficulty table, attribute names, optional guard, method order).
- "compact" (`COMPACT_FAMILIES`): the same task idea as one subclass of a scaffold of
  `spade/sandbox/scaffolds.py`, with a one-line class docstring as its description and nothing
  else (no imports, no header): `QuestionEnv` for single-answer tasks (`generate(self, rng) ->
  (question, answer)`, sometimes `check` or `attempts`) and `GameEnv` for the genuinely
  multi-turn ones (`start`, `move`, and `solve` so that `solution()` wins): number_hunt,
  code_breaker, grid_walk, switch_cause, response_law, broken_chain. About 850 characters and
  10-30 lines, in one plain style a very small model can learn; `self.difficulty` scales the
  task. The hint is one strategy sentence that does not give the answer (the Designer's reply
  is the code plus `HINT: ...`).

In both forms names, wording, parameter ranges, small mechanic variants and harmless statement
orders are drawn, so thousands of distinct programs come out and most pairs of one family are
far below the validator's near-duplicate threshold. The full form's output (and its rng
consumption) does not depend on the compact form's existence. Issue 4 measured that a
~6M-parameter model trained minutes on ~3,000 full programs writes parseable, working
environments; a model trained on general Python does not. `tests/templates/test_templates.py` runs
renders of every family in both forms through the real validator.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from spade.templates import causal, logical, mathematical, optimization, pattern, spatial
from spade.templates._kit import Rendered

__all__ = [
    "COMPACT_FAMILIES",
    "FAMILIES",
    "FORMS",
    "SKILL_FAMILIES",
    "Rendered",
    "render",
    "render_many",
]

Family = Callable[[random.Random], Rendered]

FAMILIES: dict[str, Family] = {
    **mathematical.FAMILIES,
    **logical.FAMILIES,
    **spatial.FAMILIES,
    **pattern.FAMILIES,
    **optimization.FAMILIES,
    **causal.FAMILIES,
}
"""Family name -> render function (full form)."""

COMPACT_FAMILIES: dict[str, Family] = {
    **mathematical.COMPACT_FAMILIES,
    **logical.COMPACT_FAMILIES,
    **spatial.COMPACT_FAMILIES,
    **pattern.COMPACT_FAMILIES,
    **optimization.COMPACT_FAMILIES,
    **causal.COMPACT_FAMILIES,
}
"""Family name -> compact render function (the same task idea on a scaffold)."""

FORMS = ("full", "compact")

SKILL_FAMILIES: dict[str, tuple[str, ...]] = {
    module.SKILL: tuple(module.FAMILIES)
    for module in (mathematical, logical, spatial, pattern, optimization, causal)
}
"""Skill -> the names of its families."""


def eval_families() -> tuple[str, ...]:
    """One family per game skill (the last of each, by name), held out of the warm start: their
    compact renders are the game evaluation set (`spade.evals.sets.eval_programs`)."""
    return tuple(sorted(names)[-1] for _, names in sorted(SKILL_FAMILIES.items()))


def _families(form: str) -> dict[str, Family]:
    if form == "full":
        return FAMILIES
    if form == "compact":
        return COMPACT_FAMILIES
    raise ValueError(f"form must be one of {FORMS}, got {form!r}")


def render(rng: random.Random, family: str | None = None, form: str = "full") -> Rendered:
    """One program in `form`: of `family`, or of a family drawn from `rng`."""
    table = _families(form)
    name = family if family is not None else rng.choice(sorted(table))
    return table[name](rng)


def render_many(
    count: int,
    seed: int = 0,
    max_tries_per_program: int = 20,
    form: str = "full",
    families: Sequence[str] | None = None,
) -> list[Rendered]:
    """`count` programs in `form` with distinct code, round robin over the families (sorted by
    name), or over `families` only (unknown names are an error).

    Deterministic given `seed`; a render that repeats an earlier program's code is redrawn.
    """
    table = _families(form)
    rng = random.Random(seed)
    names = sorted(table) if families is None else sorted(set(families))
    unknown = [n for n in names if n not in table]
    if unknown or not names:
        raise ValueError(f"unknown or no template families: {unknown or names}")
    out: list[Rendered] = []
    seen: set[str] = set()
    for i in range(count):
        name = names[i % len(names)]
        for _ in range(max_tries_per_program):
            program = table[name](rng)
            if program.code not in seen:
                break
        seen.add(program.code)
        out.append(program)
    return out
