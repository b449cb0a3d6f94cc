"""The weights a run starts from: recorded in its run directory (`start_model.json`) the first
time it starts, and checked every time it starts again.

A run continued from other weights than it started from would anchor its KL term to another
model, and an arm of an experiment's seed started from other weights than the seed's other arms
is no longer paired with them. Both happen without a word when a warm start is rebuilt on
another machine: the cached warm start's folder name is the same everywhere (its cache key hashes
the data and the settings), but its weights are not (bf16 matmuls on AMX and on AVX512-BF16
round differently: docs/warmstart.md). `spade experiment` writes a seed's record into the run
directory of each of its other arms before their first start (`spade.experiment.runner`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from spade.backends.smollm import sha256_file
from spade.config import UsageError
from spade.files import atomic_write_text

START_FILE = "start_model.json"
EXIT_OTHER_START = 3
"""`spade train`'s exit status when the run directory's record names other weights."""
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


class OtherStartError(UsageError):
    """The run directory records other starting weights than the ones this machine has."""


def weights_sha256(folder: str | Path) -> str | None:
    """The sha256 of a model folder's weights: with one weight file, that file's own sha256
    (what `sha256sum model.safetensors` prints and the docs cite); with several, the sha256 of
    their `name sha256` lines in name order. None for a name that is not a local folder (a hub
    id, a served model) or a folder without weights."""
    path = Path(folder)
    if not path.is_dir():
        return None
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not files:
        return None
    digests = [sha256_file(file) for file in files]
    if len(files) == 1:
        return digests[0]
    lines = "".join(f"{file.name} {d}\n" for file, d in zip(files, digests))
    return hashlib.sha256(lines.encode()).hexdigest()


def identity(folder: str | Path) -> dict[str, Any] | None:
    """What `start_model.json` holds for a run starting from `folder`, or None (no weights to
    hash: nothing is recorded or checked)."""
    digest = weights_sha256(folder)
    return None if digest is None else {"weights_sha256": digest, "folder": Path(folder).name}


def same_weights(recorded_sha: str, sha: str) -> bool:
    """Whether a recorded sha256 names `sha`. A record may hold an abbreviation `PREFIX...SUFFIX`
    (at least 6 hex digits each, as the docs print them): written for runs finished before
    records existed, whose warm start only the docs name (docs/replication.md)."""
    prefix, dots, suffix = recorded_sha.partition("...")
    if dots:
        return (
            min(len(prefix), len(suffix)) >= 6 and sha.startswith(prefix) and sha.endswith(suffix)
        )
    return recorded_sha == sha


def short(sha: str) -> str:
    """A sha256 as printed: 12 hex digits, an abbreviation as it is."""
    return sha if "..." in sha else sha[:12]


def recorded(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / START_FILE
    return json.loads(path.read_text()) if path.exists() else None


def record(run_dir: Path, start: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / START_FILE, json.dumps(start, indent=2) + "\n")


def settle(run_dir: Path, start: dict[str, Any] | None) -> None:
    """Record `start` in `run_dir` if nothing is recorded there yet; else it must be the same
    weights (OtherStartError, raised before the run changes anything, if not)."""
    check(run_dir, start)
    if start is not None and recorded(run_dir) is None:
        record(run_dir, start)


def check(run_dir: Path, start: dict[str, Any] | None) -> None:
    """OtherStartError if `run_dir` records other starting weights than `start` (nothing to
    check without a record or without `start`). A checkpoint holds only the trained
    parameters: loaded over other starting weights, it is another model."""
    before = recorded(run_dir)
    if start is None or before is None:
        return
    wanted = str(before.get("weights_sha256"))
    if not same_weights(wanted, start["weights_sha256"]):
        raise OtherStartError(
            f"{run_dir} starts from weights sha256 {short(wanted)} "
            f"({before.get('why', 'its first start')}), but here {start['folder']} has "
            f"{start['weights_sha256'][:12]}: a warm start built on another CPU differs "
            "(docs/warmstart.md). Continue it where that warm start is, or start a new run"
        )
