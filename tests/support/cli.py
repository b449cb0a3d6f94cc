"""The `spade` command as the CLI tests run it: the installed script, else `python -m`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "programs"
SCRIPT = Path(sys.executable).parent / "spade"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "spade.cli.main"]


def run_spade(
    *args: str | Path, timeout: float, cache: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `spade ARGS` from the checkout without wrapping or colour codes (and with its model
    cache in `cache`, when given); output captured as text."""
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    if cache is not None:
        env["SPADE_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [*COMMAND, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )
