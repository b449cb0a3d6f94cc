"""Parametric environment families: warm-start data for the embedded model.

    from spade.templates import FAMILIES, render, render_many
    program = render(random.Random(7))                    # one random family, one variant
    programs = render_many(3000, seed=0)                  # balanced over families, no repeats

Each family is a pure function `render(rng) -> Rendered(code, hint, skill, family)` that writes a
complete, compact environment file in the format of the bundled seeds (docstring header with
description, `skill:`, `hint:`, `difficulty: 1-3`, `turns:`; one `*Env` class with
`__init__(max_turns=..., difficulty=2)`, `reset(seed)` on a local `random.Random(seed)`, `step`
parsing `\\boxed{}`, and `solution()` returning the winning replies). The same rng state gives the
same program. Every family varies its mechanics, feedback, win condition, names and parameters,
and all families share a drawn `Style` (parsing helper, info dict, difficulty table, attribute
names, optional guard, method order), so thousands of distinct programs come out and most pairs
are far below the validator's near-duplicate threshold. Issue 4 measured that a ~6M-parameter
model trained minutes on ~3,000 such programs writes parseable, working environments; a model
trained on general Python does not. `tests/test_templates.py` runs renders of every family
through the real validator.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from spade.templates import causal, logical, mathematical, optimization, pattern, spatial
from spade.templates._kit import Rendered

__all__ = ["FAMILIES", "SKILL_FAMILIES", "Rendered", "render", "render_many"]

Family = Callable[[random.Random], Rendered]

FAMILIES: dict[str, Family] = {
    **mathematical.FAMILIES,
    **logical.FAMILIES,
    **spatial.FAMILIES,
    **pattern.FAMILIES,
    **optimization.FAMILIES,
    **causal.FAMILIES,
}
"""Family name -> render function."""

SKILL_FAMILIES: dict[str, tuple[str, ...]] = {
    module.SKILL: tuple(module.FAMILIES)
    for module in (mathematical, logical, spatial, pattern, optimization, causal)
}
"""Skill -> the names of its families."""


def render(rng: random.Random, family: str | None = None) -> Rendered:
    """One program: of `family`, or of a family drawn from `rng`."""
    name = family if family is not None else rng.choice(sorted(FAMILIES))
    return FAMILIES[name](rng)


def render_many(count: int, seed: int = 0, max_tries_per_program: int = 20) -> list[Rendered]:
    """`count` programs with distinct code, round robin over the families (sorted by name).

    Deterministic given `seed`; a render that repeats an earlier program's code is redrawn.
    """
    rng = random.Random(seed)
    names = sorted(FAMILIES)
    out: list[Rendered] = []
    seen: set[str] = set()
    for i in range(count):
        name = names[i % len(names)]
        for _ in range(max_tries_per_program):
            program = FAMILIES[name](rng)
            if program.code not in seen:
                break
        seen.add(program.code)
        out.append(program)
    return out
