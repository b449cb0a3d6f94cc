"""The near-duplicate measure: token 5-gram sets with literals normalised (`shingles`) and their
Jaccard similarity, which the validator's `duplicate` and `near_duplicate` checks
(`check_duplicates`) and the run report's diversity figures use.
"""

from __future__ import annotations

import functools
import io
import tokenize
from collections.abc import Sequence

from spade.envs.checks import ValidatorConfig
from spade.types import CheckFailure, Program


@functools.lru_cache(maxsize=2048)
def shingles(code: str, n: int = 5) -> frozenset[tuple[str, ...]]:
    """Token n-grams with literals normalised: a renamed constant does not make a new program.

    Cached for the last 2,048 programs (~20 KB for a compact design, ~160 KB for a 7 KB seed):
    every validation compares its program with the whole pool, which would otherwise tokenize
    every pool member again for every design."""
    tokens: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (
                tokenize.COMMENT,
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENDMARKER,
            ):
                continue
            tokens.append(
                {tokenize.STRING: "STR", tokenize.NUMBER: "NUM"}.get(tok.type, tok.string)
            )
    except (tokenize.TokenError, SyntaxError):
        tokens = code.split()
    return frozenset(tuple(tokens[i : i + n]) for i in range(max(len(tokens) - n + 1, 1)))


def check_duplicates(
    program: Program, pool: Sequence[Program], cfg: ValidatorConfig
) -> CheckFailure | None:
    env_id = program.env_id
    mine = shingles(program.code)
    for other in pool:
        if other.env_id == env_id:
            return CheckFailure(
                "duplicate", f"identical to {env_id[:12]} ({other.source or 'pool'})"
            )
    for other in pool:
        theirs = shingles(other.code)
        jaccard = len(mine & theirs) / max(len(mine | theirs), 1)
        if jaccard >= cfg.near_duplicate_threshold:
            return CheckFailure(
                "near_duplicate",
                f"{jaccard:.2f} token similarity to {other.env_id[:12]} ({other.source or 'pool'})",
            )
    return None
