"""The run directory's loop state and checkpoints: what `--resume` continues from.

`state.json` commits an iteration: `checkpoint` writes the trainer state, then the metrics line,
then `state.json` (atomically); `restore` loads the last committed iteration and drops whatever a
killed iteration left behind (pool rows, metrics lines, checkpoint folders).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

from spade.backends.base import Models
from spade.envs.pool import Pool
from spade.files import atomic_write_text


@dataclasses.dataclass
class LoopState:
    """Everything besides the trainer and the pool that the next iteration needs (JSON)."""

    iteration: int = 0
    """The last completed iteration."""
    pending: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Designer samples waiting for their window to close."""
    reward_state: dict[str, Any] | None = None
    """State of a stateful designer reward (learning potential)."""
    checkpoint: str | None = None


def read_metrics(path: Path) -> tuple[list[dict[str, Any]], int]:
    """metrics.jsonl as (one dict per complete line, number of lines skipped): a run still
    writing it may have left half a line."""
    if not path.exists():
        return [], 0
    rows, skipped = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if isinstance(row, dict) and isinstance(row.get("iteration"), int):
            rows.append(row)
    return rows, skipped


def save_state(run_dir: Path, state: LoopState) -> None:
    atomic_write_text(run_dir / "state.json", json.dumps(dataclasses.asdict(state)))


def load_state(run_dir: Path) -> LoopState:
    path = run_dir / "state.json"
    return LoopState(**json.loads(path.read_text())) if path.exists() else LoopState()


def checkpoint(
    run_dir: Path, it: int, models: Models, state: LoopState, metrics: dict[str, Any]
) -> None:
    """Trainer state first, then metrics, then state.json (which commits the iteration)."""
    ckpt = run_dir / "checkpoints" / f"iter-{it:05d}"
    if ckpt.exists():
        shutil.rmtree(ckpt)
    models.agent_trainer.save(ckpt / "agent")
    if models.designer_trainer is not models.agent_trainer:
        models.designer_trainer.save(ckpt / "designer")
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write(json.dumps(metrics) + "\n")
    previous = state.checkpoint
    state.iteration, state.checkpoint = it, str(ckpt.relative_to(run_dir))
    save_state(run_dir, state)
    if previous and previous != state.checkpoint:
        shutil.rmtree(run_dir / previous, ignore_errors=True)


def restore(run_dir: Path, models: Models, pool: Pool) -> LoopState:
    """Load the last committed iteration; drop whatever a killed iteration left behind."""
    state = load_state(run_dir)
    if state.checkpoint:
        models.agent_trainer.load(run_dir / state.checkpoint / "agent")
        if models.designer_trainer is not models.agent_trainer:
            models.designer_trainer.load(run_dir / state.checkpoint / "designer")
    pool.truncate_after(state.iteration)
    metrics = run_dir / "metrics.jsonl"
    if metrics.exists():
        lines = [
            ln
            for ln in metrics.read_text().splitlines()
            if ln.strip() and json.loads(ln)["iteration"] <= state.iteration
        ]
        metrics.write_text("".join(ln + "\n" for ln in lines))
    for stale in (
        (run_dir / "checkpoints").glob("iter-*") if (run_dir / "checkpoints").exists() else ()
    ):
        if state.checkpoint is None or stale.name != Path(state.checkpoint).name:
            shutil.rmtree(stale, ignore_errors=True)
    return state
