"""The environment files a command is given: the one path collection of `spade validate` (and
its `--pool`) and `spade eval`.

Import-light like spade/cli/main.py: the bundle reader loads inside the function.
"""

from __future__ import annotations

from pathlib import Path


def environment_files(paths: list[Path]) -> list[Path] | str:
    """Environment files: files as given; a directory's *.py, or, for a directory exported by
    `spade pool export --format openenv|verifiers|gem`, only the environments its manifests
    list (the adapters beside them are not environments). A string is the usage error."""
    from spade.envs.bundle import BundleError, bundles_under

    files: list[Path] = []
    for path in paths:
        try:
            bundles = bundles_under(path) if path.is_dir() else []
        except BundleError as err:
            return str(err)
        if bundles:
            files.extend(b.root / e.file for b in bundles for e in b.envs)
        elif path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.py") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            return f"no such file or directory: {path}"
    return files or "no environment files (*.py) found"
