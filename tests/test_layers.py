"""The package's layers, read from its imports (every import, lazy ones included): each module
imports only from its own package or from a lower layer, and no chain of imports comes back to
where it started. The README's map lists the same packages, one line each, in `ls spade/` order."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spade"
DATA = {"seeds", "heldout", "data", "tokenizer_data"}  # environment files and text, no imports

LAYERS: list[set[str]] = [
    {"types", "files"},
    {"sandbox"},
    {"rewards"},  # the hint gate finds `\\boxed{}` with the sandbox runtime's parser
    {"backends"},
    {"envs", "templates"},
    {"config"},
    {"start_weights"},  # a run's starting weights: read by train and experiment
    {"prompts"},
    {"warmstart"},
    {"selfplay"},
    {"evals"},
    {"train"},
    {"experiment"},
    {"report", "exports"},
    {"cli"},
    {"__main__"},
]
"""Lowest first: `spade.<unit>` (a top-level module or package) is in exactly one layer."""


def _unit(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def _layer(unit: str) -> int:
    (index,) = [i for i, units in enumerate(LAYERS) if unit in units]
    return index


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _exists(module: str) -> bool:
    base = ROOT / module.replace(".", "/")
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports() -> dict[str, set[str]]:
    """Module -> the spade modules it imports (a `from spade.x import name` of a submodule
    counts as that submodule)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in DATA:
            continue
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.split(".")[0] == "spade"}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] != "spade":
                    continue
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.add(sub if _exists(sub) else node.module)
        graph[_module_of(path)] = targets - {"spade"}
    return graph


def test_every_unit_of_the_package_has_a_layer() -> None:
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    units = {u for u in units if not u.startswith("_") or u == "__main__"}
    units -= DATA | {"__pycache__"}
    assert units == set().union(*LAYERS)


def test_no_module_imports_from_a_higher_layer() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in _imports().items()
        for target in targets
        if _unit(module)
        and _unit(target)
        and _unit(module) != _unit(target)
        and _layer(_unit(target)) >= _layer(_unit(module))
    ]
    assert upward == []


def test_no_import_cycle() -> None:
    graph = _imports()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_readme_map_lists_every_package() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^spade/(\w+)(?:/|\.py)", readme, re.M))
    listed |= set(re.findall(r"; spade/(\w+)/:", readme))
    present = {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if p.name != "__pycache__" and not p.name.startswith("__")
    }
    assert listed == present
