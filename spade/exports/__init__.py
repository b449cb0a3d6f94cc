"""Environments exported where other trainers read them: OpenEnv, verifiers and GEM.

`export(programs, out, fmt, name)` writes a directory in the format's own layout (below) that
holds a bundle (`bundle.py`: the programs as text and a manifest with their hashes) and a thin
adapter that imports `spade.exports.<fmt>_env`. Loading the directory never executes a program:
the adapter plays them in spade's sandbox (`host.py`). The host libraries are imported only by
the adapters, so exporting needs none of them.

- `openenv`: OpenEnv's environment layout (`openenv.yaml`, `pyproject.toml`, `models.py`,
  `client.py`, `server/app.py` with `app` and `main()`); serve with `python -m server.app` or
  `uvicorn server.app:app` from the directory.
- `verifiers`: a package `<name>/` (with `pyproject.toml`) exporting a `Taskset` and `SpadeEnv`
  through `__all__`; `vf eval <name>` once installed.
- `gem`: a package `<name>/` whose import registers `spade:<name>-v0` and
  `spade:<name>-<index>-v0` with `gem.register`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from spade.envs.bundle import DEFAULT_MAX_TURNS, BundleError, check_name, write_bundle
from spade.files import atomic_write_text
from spade.types import Program

Format = Literal["openenv", "verifiers", "gem"]
FORMATS: tuple[Format, ...] = ("openenv", "verifiers", "gem")

__all__ = ["FORMATS", "BundleError", "Format", "export"]


def export(
    programs: Sequence[Program],
    out: Path,
    fmt: Format,
    name: str,
    max_turns: int = DEFAULT_MAX_TURNS,
) -> Path:
    """Write `programs` to the directory `out` in format `fmt`; returns the bundle directory.

    `out` may exist but must not hold another export's files of a different name."""
    if fmt not in FORMATS:
        raise BundleError(f"unknown format {fmt!r}: choose from {', '.join(FORMATS)}")
    check_name(name)
    out.mkdir(parents=True, exist_ok=True)
    bundle_dir = out if fmt == "openenv" else out / name
    envs = write_bundle(programs, bundle_dir, name, max_turns)
    files = _FILES[fmt](name, len(envs))
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    return bundle_dir


def _pyproject(project: str, dependencies: str, scripts: str = "", packaging: str = "") -> str:
    return f"""[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{project}"
version = "0.1.0"
description = "Environments written by a spade Designer, played in spade's sandbox"
requires-python = ">=3.10"
dependencies = [{dependencies}]
{scripts}
{packaging}"""


def _readme(name: str, count: int, body: str) -> str:
    return f"""# {name}

{count} environments exported by `spade pool export` (or `spade design --format`). The programs
in `envs/` were written by a language model: they run only in spade's sandbox, started by the
adapter in this directory, never in your trainer's interpreter. `spade_envs.json` lists them with
their sha256; a file changed after export is refused.

{body}
"""


def _openenv_files(name: str, count: int) -> dict[str, str]:
    readme = _readme(
        name,
        count,
        f"""Serve it (from this directory): `python -m server.app --port 8000`, then

```python
from {name} import SpadeAction, SpadeEnvClient

with SpadeEnvClient(base_url="http://localhost:8000").sync() as env:
    result = env.reset(seed=0)          # task="<index or env_id prefix>" picks one
    result = env.step(SpadeAction(message="\\\\boxed{{42}}"))
    print(result.observation.text, result.reward, result.done, result.observation.won)
```

No Dockerfile: spade's sandbox needs the host kernel's namespaces, Landlock and cgroups, which a
default container does not grant (see spade's docs/exports.md).""",
    )
    return {
        "openenv.yaml": (
            f"spec_version: 1\nname: {name}\ntype: space\nruntime: fastapi\n"
            "app: server.app:app\nport: 8000\n"
        ),
        "pyproject.toml": _pyproject(
            f"openenv-{name}",
            '"spade-rl[openenv]", "openenv-core[core]>=0.3"',
            scripts=f'\n[project.scripts]\nserver = "{name}.server.app:main"\n',
            packaging=(
                f'[tool.setuptools]\npackages = ["{name}", "{name}.server"]\n'
                f'package-dir = {{ "{name}" = ".", "{name}.server" = "server" }}\n\n'
                f'[tool.setuptools.package-data]\n"{name}" = ["spade_envs.json", "envs/*.py"]\n'
            ),
        ),
        "README.md": readme,
        "__init__.py": (
            f'"""{name}: spade environments served with OpenEnv."""\n\n'
            "from spade.exports.openenv_env import SpadeAction, SpadeEnvClient, "
            "SpadeObservation, SpadeState\n\n"
            '__all__ = ["SpadeAction", "SpadeEnvClient", "SpadeObservation", "SpadeState"]\n'
        ),
        "models.py": (
            '"""The action, observation and state models (spade.exports.openenv_env)."""\n\n'
            "from spade.exports.openenv_env import SpadeAction, SpadeObservation, SpadeState\n\n"
            '__all__ = ["SpadeAction", "SpadeObservation", "SpadeState"]\n'
        ),
        "client.py": (
            '"""The OpenEnv client (spade.exports.openenv_env.SpadeEnvClient)."""\n\n'
            "from spade.exports.openenv_env import SpadeEnvClient\n\n"
            '__all__ = ["SpadeEnvClient"]\n'
        ),
        "server/__init__.py": '"""The OpenEnv server of this bundle."""\n',
        "server/app.py": f'''"""OpenEnv server for {name} (`python -m server.app`)."""

import argparse
from pathlib import Path

from spade.exports.openenv_env import make_app

app = make_app(Path(__file__).resolve().parent.parent)


def main(host: str = "0.0.0.0", port: int = 8000) -> None:
    import uvicorn

    uvicorn.run(app, host=host, port=port)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    main(args.host, args.port)
''',
    }


def _package_data(name: str) -> str:
    return (
        f'[tool.setuptools]\npackages = ["{name}"]\n\n'
        f'[tool.setuptools.package-data]\n"{name}" = ["spade_envs.json", "envs/*.py"]\n'
    )


def _verifiers_files(name: str, count: int) -> dict[str, str]:
    body = f"""Install it (`pip install .`) and evaluate with `vf eval {name}`, or in Python:

```python
import verifiers.v1 as vf
env = vf.load_environment(vf.EnvConfig(taskset={{"id": "{name}", "seeds": 8}}))
```

Each task is one environment at one seed; the reward `spade_return` is 1 for a win."""
    return {
        "pyproject.toml": _pyproject(name, '"spade-rl[verifiers]"', packaging=_package_data(name)),
        "README.md": _readme(name, count, body),
        f"{name}/__init__.py": f'''"""{name}: spade environments as a verifiers taskset."""

from pathlib import Path

from spade.exports.verifiers_env import SpadeEnv, SpadeEnvConfig
from spade.exports.verifiers_env import SpadeTaskset as _SpadeTaskset


class SpadeTaskset(_SpadeTaskset):
    BUNDLE_DIR = Path(__file__).resolve().parent


__all__ = ["SpadeEnv", "SpadeEnvConfig", "SpadeTaskset"]
''',
    }


def _gem_files(name: str, count: int) -> dict[str, str]:
    body = f"""Import the package to register its ids, then make them as any GEM environment:

```python
import gem, {name}
env = gem.make("spade:{name}-v0")        # reset(seed) draws one of the {count}
obs, info = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step("\\\\boxed{{42}}")
```

`spade:{name}-000-v0` ... `spade:{name}-{count - 1:03d}-v0` are the environments one by one."""
    return {
        "pyproject.toml": _pyproject(
            f"gem-{name}", '"spade-rl", "gem-llm>=0.1"', packaging=_package_data(name)
        ),
        "README.md": _readme(name, count, body),
        f"{name}/__init__.py": f'''"""{name}: spade environments registered with GEM on import."""

from pathlib import Path

from spade.exports.gem_env import register_bundle

IDS = register_bundle(Path(__file__).resolve().parent)
"""The registered ids: the whole pool first, then one per environment."""
''',
    }


_FILES = {"openenv": _openenv_files, "verifiers": _verifiers_files, "gem": _gem_files}
