"""Environment files made runnable on the paper's reference runtime, which has no scaffolds.

`standalone()` inlines the compact bases a file uses (`QuestionEnv`, `GameEnv` from
scaffolds.py) under names that do not end in `Env`, so the reference loader (first top-level
`*Env` class) still finds the file's own class. Trusted code only (`spade design` writes its
files with it): it transforms source text and never runs in the sandbox, so it is kept out of
runtime.py, the file the sandbox's interpreter loads.
"""

from __future__ import annotations

import ast
import io
import json
import tokenize

from spade.sandbox.runtime import SCAFFOLD_SOURCE, env_class_names

STANDALONE_NAMES = {"QuestionEnv": "_SpadeQuestion", "GameEnv": "_SpadeGame"}
"""What the inlined scaffolds are called in a standalone file: names that do not end in `Env`,
so the reference loader (first top-level `*Env` class) still finds the file's own class."""


def _scaffold_body() -> str:
    """The scaffolds' source without its module docstring."""
    first = ast.parse(SCAFFOLD_SOURCE).body[0]
    skip = (first.end_lineno or 0) if isinstance(first, ast.Expr) else 0
    return "\n".join(SCAFFOLD_SOURCE.splitlines()[skip:]).strip("\n")


def _rename(source: str, names: dict[str, str]) -> str:
    """`source` with every NAME token in `names` replaced (strings and comments untouched)."""
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in names:
            edits.append((tok.start[0] - 1, tok.start[1], tok.end[1], names[tok.string]))
    for row, start, end, new in reversed(edits):
        lines[row] = lines[row][:start] + new + lines[row][end:]
    return "".join(lines)


def _leading_lines(tree: ast.Module) -> int:
    """Lines taken by the module docstring and `__future__` imports at the top of a file."""
    cut = 0
    for i, node in enumerate(tree.body):
        is_doc = (
            i == 0
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (is_doc or is_future):
            break
        cut = node.end_lineno or cut
    return cut


def standalone(source: str) -> str:
    """`source` made runnable without this runtime's scaffolds (raises SyntaxError).

    The scaffolds it uses are inlined after its docstring (and `__future__` imports) under
    `STANDALONE_NAMES`, and its references to them renamed. A file that uses no scaffold (or
    defines its own class of that name) comes back unchanged. A file without a module docstring
    gets its environment class's first docstring line as one: reference files start with a
    one-line docstring.
    """
    tree = ast.parse(source)
    own = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    used = {
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.NAME and tok.string in STANDALONE_NAMES and tok.string not in own
    }
    if not used:
        return source
    lines = _rename(source, {name: STANDALONE_NAMES[name] for name in used}).splitlines()
    cut = _leading_lines(tree)
    header: list[str] = []
    if ast.get_docstring(tree) is None:
        names = env_class_names(source)
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in names), None)
        doc = (ast.get_docstring(cls) or "").strip() if cls is not None else ""
        first = doc.splitlines()[0] if doc else "A generated environment."
        header = [json.dumps(first)]  # a one-line string literal, escapes and quotes handled
    inlined = _rename(_scaffold_body(), STANDALONE_NAMES)
    parts = [*header, *lines[:cut], "", "# --- inlined by spade: the compact base class ---"]
    parts += [inlined, "# --- end of the inlined base class ---", "", *lines[cut:]]
    return "\n".join(parts).rstrip("\n") + "\n"
