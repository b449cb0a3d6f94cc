"""The before-cache: the "before" evaluation of a model folder on a paired set, computed once.

An entry is keyed (`before_cache_key`) by the folder's weights fingerprint, the Agent's precision
and device (`model_identity`), the set's content hash, the sampling settings, the turn and
context budget and the Agent's system prompt, so every run and seed from the same warm start
shares it; it lives in the model cache's `evaluations/` folder (`before_cache_path`) and holds
the set's outcomes as a string of 0/1 in item order. `spade.evals.paired` reads and writes it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from spade.backends.base import Models, SamplingParams
from spade.config import TrainConfig
from spade.evals.sets import EvalSet
from spade.files import atomic_write_text
from spade.types import GAME

CACHE_VERSION = 1
"""Bump when what a cached outcome means changes (the rollout, the scoring)."""


def weights_fingerprint(folder: str | Path) -> str:
    """sha256 over a model folder's top-level files (weights, config, tokenizer, chat
    template) except spade's own notes (`spade_*`), by name and content; "" when `folder` is
    not a directory (a hub id). Memoised per file sizes and modification times."""
    path = Path(folder)
    if not path.is_dir():
        return ""
    files = sorted(
        f for f in path.iterdir() if f.is_file() and not f.name.startswith(("spade_", "."))
    )
    stamp = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    return _fingerprint(str(path.resolve()), stamp)


@functools.lru_cache(maxsize=16)
def _fingerprint(folder: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for name, _, _ in stamp:
        digest = hashlib.sha256()
        with open(Path(folder) / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        h.update(name.encode() + b"\0" + digest.digest())
    return h.hexdigest()


def model_identity(models: Models) -> dict[str, str] | None:
    """What the Agent's outcomes depend on besides the set and the sampling: its model folder's
    weights fingerprint, precision and device type; None when it has no model folder (a
    scripted policy, a served model), which disables the before-cache."""
    agent: Any = models.agent
    folder = getattr(agent, "model_path", None)
    fingerprint = weights_fingerprint(folder) if folder else ""
    if not fingerprint:
        return None
    device = str(getattr(agent, "device", "")).split(":")[0]
    return {
        "weights": fingerprint,
        "precision": str(getattr(agent, "precision", "")),
        "device": device,
    }


def before_cache_key(
    identity: dict[str, str], evalset: EvalSet, params: SamplingParams, cfg: TrainConfig
) -> str:
    """The before-cache key: the model's identity, the set's content hash, the sampling settings
    (the seed only when sampling), the turn and context budget and the Agent's system prompt."""
    from spade.prompts import agent_system

    sampling = {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": params.top_k,
        "max_tokens": params.max_tokens,
        "stop": list(params.stop),
        "seed": params.seed if params.temperature > 0 else None,
    }
    parts = {
        "v": CACHE_VERSION,
        "model": identity,
        "set": evalset.content_hash,
        "sampling": sampling,
        "max_turns": cfg.play.max_turns,
        "max_context_tokens": cfg.model.max_context_tokens,
        "agent_system": hashlib.sha256(agent_system(GAME).encode()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def before_cache_path(key: str) -> Path:
    """Where a cached "before" lives: the model cache's `evaluations/` folder
    (`spade.backends.tiny.cache_dir()`, $SPADE_CACHE_DIR when set)."""
    from spade.backends.tiny import cache_dir

    return cache_dir() / "evaluations" / f"before-{key}.json"


def read_cached(path: Path, evalset: EvalSet) -> dict[str, Any] | None:
    """The entry at `path`, or None when it is missing, unreadable, or not outcomes of
    `evalset`'s items (another content hash, another length, not a string of 0/1)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    outcomes = data.get("outcomes")
    if data.get("set_hash") != evalset.content_hash or not isinstance(outcomes, str):
        return None
    if len(outcomes) != len(evalset.programs) or set(outcomes) - {"0", "1"}:
        return None
    return data


def write_cached(path: Path, record: dict[str, Any]) -> None:
    """Write an entry atomically (runs of several seeds may write it at once: each has its own
    temporary)."""
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
