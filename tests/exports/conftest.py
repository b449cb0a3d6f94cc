"""Fixtures of the export tests (programs in exportkit.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from exportkit import COMPACT, MARKER

from spade.envs import bundled
from spade.types import Program


@pytest.fixture
def marker_path() -> Path:
    path = Path(f"/tmp/spade-export-marker-{uuid.uuid4().hex}")
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
def programs(marker_path: Path) -> list[Program]:
    """[bundled seed (one turn), compact design, marker program]."""
    seed = next(p for p in bundled.seed_programs() if "backdoor" in p.source)
    marker = MARKER.replace("MARKER_PATH", repr(str(marker_path)))
    return [seed, Program.from_code(COMPACT), Program.from_code(marker)]
