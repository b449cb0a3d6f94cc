"""Environments and data shipped with the package: seeds, held-out evaluation set, grounding corpus.

Seeds (`spade/seeds/`) are exemplars for the Designer and warm-start data for the default model.
Held-out environments (`spade/heldout/`) are never used for either: they are the evaluation set.
The grounding corpus (`spade/data/grounding.jsonl`) holds original documents the Designer grounds
new environments in (one per design attempt).
"""

from __future__ import annotations

import json
from pathlib import Path

from spade.types import Program

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "seeds"
HELDOUT = ROOT / "heldout"
GROUNDING = ROOT / "data" / "grounding.jsonl"


def _programs(folder: Path) -> list[Program]:
    return [Program.from_file(p) for p in sorted(folder.rglob("*.py"))]


def seed_programs() -> list[Program]:
    return _programs(SEEDS)


def heldout_programs() -> list[Program]:
    return _programs(HELDOUT)


def grounding_documents(path: Path = GROUNDING) -> list[dict[str, str]]:
    """The corpus as a list of {title, text, source}; raises ValueError naming a bad line."""
    docs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(doc, dict) or not all(
            isinstance(doc.get(k), str) for k in ("title", "text", "source")
        ):
            raise ValueError(f"{path}:{number}: expected string fields title, text, source")
        docs.append(doc)
    return docs
