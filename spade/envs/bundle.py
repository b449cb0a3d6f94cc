"""The part every export format shares: the environment files and a manifest that names them.

An exported directory holds `spade_envs.json` (this module's manifest) and `envs/*.py`, the
model-written programs as text. The host framework's side (OpenEnv server, verifiers taskset,
GEM registration) reads the manifest and hands the files to the sandbox; nothing imports them.
Each file's sha256 is in the manifest and checked when the bundle is read, so a file edited
after export is refused rather than run under the old id.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spade.files import atomic_write_text
from spade.types import Program, skill_slug

MANIFEST = "spade_envs.json"
BUNDLE_FORMAT = "spade-envs"
BUNDLE_VERSION = 1
DEFAULT_MAX_TURNS = 25
NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")


class BundleError(ValueError):
    """A manifest or environment file that cannot be used (missing, edited, malformed)."""


@dataclasses.dataclass(frozen=True)
class BundledEnv:
    """One environment of a bundle: where its code is and what is known about it."""

    env_id: str
    file: str
    """Path of the program, relative to the bundle directory."""
    sha256: str
    skill: str = ""
    hint: str = ""
    description: str = ""


@dataclasses.dataclass(frozen=True)
class Bundle:
    """A read, checked bundle: its directory, name, turn cap and environments with their code."""

    root: Path
    name: str
    max_turns: int
    envs: tuple[BundledEnv, ...]
    code: dict[str, str]
    """env_id -> program text."""

    def find(self, task: str | int) -> BundledEnv:
        """The environment at index `task`, or whose env_id starts with `task` (unique)."""
        if isinstance(task, int) or (isinstance(task, str) and task.isdigit() and len(task) < 8):
            index = int(task)
            if not 0 <= index < len(self.envs):
                raise KeyError(f"task index {index} out of range (0-{len(self.envs) - 1})")
            return self.envs[index]
        matches = [e for e in self.envs if e.env_id.startswith(task)]
        if len(matches) != 1:
            what = "no environment" if not matches else f"{len(matches)} environments"
            raise KeyError(f"{what} in {self.name} with an env_id starting {task!r}")
        return matches[0]


def sha256_of(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def check_name(name: str) -> str:
    """A package/module name every format accepts: lower case, digits and underscores."""
    if not NAME_RE.fullmatch(name):
        raise BundleError(
            f"export name {name!r} must be a Python identifier in lower case "
            "(letters, digits, underscores; starting with a letter; at most 64 characters)"
        )
    return name


def write_bundle(
    programs: Sequence[Program],
    directory: Path,
    name: str,
    max_turns: int = DEFAULT_MAX_TURNS,
) -> list[BundledEnv]:
    """Write `directory/envs/*.py` and `directory/spade_envs.json` for `programs` (in order,
    duplicates by env_id dropped). Raises BundleError on an empty list or a bad name."""
    check_name(name)
    if max_turns < 1:
        raise BundleError(f"max_turns must be at least 1, got {max_turns}")
    unique: dict[str, Program] = {}
    for p in programs:
        unique.setdefault(p.env_id, p)
    if not unique:
        raise BundleError("nothing to export: no environments")
    (directory / "envs").mkdir(parents=True, exist_ok=True)
    envs = []
    for env_id, p in unique.items():
        stem = f"{skill_slug(p.skill) or 'env'}_{env_id[:12]}"
        stem = re.sub(r"[^a-z0-9_]", "_", stem)
        rel = f"envs/{stem}.py"
        atomic_write_text(directory / rel, p.code)
        envs.append(BundledEnv(env_id, rel, sha256_of(p.code), p.skill, p.hint, p.description))
    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "name": name,
        "max_turns": max_turns,
        "envs": [dataclasses.asdict(e) for e in envs],
    }
    atomic_write_text(directory / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    return envs


def is_bundle(directory: Path) -> bool:
    return (directory / MANIFEST).is_file()


def read_bundle(directory: str | Path) -> Bundle:
    """Read and check a bundle: the manifest's shape, every file present and unchanged."""
    root = Path(directory)
    path = root / MANIFEST
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{root} is not a spade export: no {MANIFEST}") from None
    except json.JSONDecodeError as err:
        raise BundleError(f"{path}: not JSON ({err})") from None
    if not isinstance(raw, dict) or raw.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{path}: not a {BUNDLE_FORMAT} manifest")
    if raw.get("version") != BUNDLE_VERSION:
        raise BundleError(f"{path}: version {raw.get('version')!r}, this spade reads 1")
    fields = {f.name for f in dataclasses.fields(BundledEnv)}
    envs: list[BundledEnv] = []
    code: dict[str, str] = {}
    for i, row in enumerate(raw.get("envs") or []):
        if not isinstance(row, dict) or not {"env_id", "file", "sha256"} <= row.keys():
            raise BundleError(f"{path}: envs[{i}] needs env_id, file and sha256")
        env = BundledEnv(**{k: str(v) for k, v in row.items() if k in fields})
        file = (root / env.file).resolve()
        if root.resolve() not in file.parents:
            raise BundleError(f"{path}: envs[{i}] file {env.file!r} is outside the bundle")
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise BundleError(f"{path}: envs[{i}] file {env.file} is missing") from None
        if sha256_of(text) != env.sha256:
            raise BundleError(
                f"{env.file} changed after export (sha256 differs from {MANIFEST}); "
                "export again, or validate and import it as a new environment"
            )
        envs.append(env)
        code[env.env_id] = text
    if not envs:
        raise BundleError(f"{path}: no environments")
    max_turns = raw.get("max_turns", DEFAULT_MAX_TURNS)
    if not isinstance(max_turns, int) or max_turns < 1:
        raise BundleError(f"{path}: max_turns must be a positive integer")
    return Bundle(root, check_name(str(raw.get("name", ""))), max_turns, tuple(envs), code)


def bundles_under(directory: Path) -> list[Bundle]:
    """Every bundle in `directory` or below it (an exported package), read and checked; [] for
    a directory that holds none."""
    return [read_bundle(m.parent) for m in sorted(directory.rglob(MANIFEST))]


def package_name(out: Path) -> str:
    """A package name from a directory name: `My Envs-2` -> `my_envs_2`."""
    name = re.sub(r"[^a-z0-9_]+", "_", out.resolve().name.lower()).strip("_")
    return name if name[:1].isalpha() else f"spade_{name}".rstrip("_")


def bundle_programs(bundle: Bundle) -> list[Program]:
    """The bundle's environments as programs (for `spade validate` and `spade pool import`)."""
    return [
        Program.from_code(
            bundle.code[e.env_id],
            source=str(bundle.root / e.file),
            hint=e.hint or None,
            skill=e.skill or None,
        )
        for e in bundle.envs
    ]
