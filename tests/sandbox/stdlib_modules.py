"""Print, as JSON, every standard-library module that imports in this interpreter.

Run by tests/sandbox/test_stdlib.py as `python -s -S stdlib_modules.py` (no site-packages, like a
sandbox worker). Candidates: every name of `sys.stdlib_module_names` and, recursively, every
submodule of those packages, except the ones in SKIPPED (each with its reason).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import pkgutil
import sys
import warnings

SKIPPED = {
    "antigravity": "importing it opens a web browser (starts a process)",
    "__main__": "the running script itself, not a library module",
}
SKIPPED_CHILDREN = {
    "__main__": "running a package's __main__ runs the program (ensurepip installs pip)",
    "idlelib": "IDLE's modules start the GUI shell and Tk windows when imported",
    "turtledemo": "demo programs, some of which open Tk windows when imported",
    "test": "CPython's regression suite: its modules run and patch things when imported",
    "tests": "test packages inside the standard library (lib2to3.tests...)",
}


def candidates() -> list[str]:
    names = [n for n in sorted(sys.stdlib_module_names) if n not in SKIPPED]
    found: list[str] = []
    todo = list(names)
    while todo:
        name = todo.pop(0)
        found.append(name)
        if name.split(".")[-1] in SKIPPED_CHILDREN or name in SKIPPED_CHILDREN:
            continue
        try:
            module = importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - reported by the import pass below
            continue
        for info in pkgutil.iter_modules(getattr(module, "__path__", None) or []):
            child = f"{name}.{info.name}"
            if info.name not in SKIPPED_CHILDREN and not info.name.startswith("test"):
                todo.append(child)
    return found


def importable(names: list[str]) -> list[str]:
    ok = []
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - platform modules (winreg, _msi...) are absent
            continue
        ok.append(name)
    return ok


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    with contextlib.redirect_stdout(io.StringIO()):  # `this` and `__hello__` print
        result = importable(candidates())
    print(json.dumps(result))
