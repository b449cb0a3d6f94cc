"""Mirror a run to experiment trackers: trackio, W&B, TensorBoard (`spade train --log`).

The run directory stays the record (`metrics.jsonl`, the HTML report); a tracker gets a copy: the
config once, then every committed metrics row, its step the iteration. Each tracker is imported
only when asked for (extras `trackio`, `wandb`, `tensorboard`) and runs however its library is
set up (`WANDB_MODE=offline`, `TRACKIO_DIR`, ...): nothing here needs a network.

`tracking.json` in the run directory names the tracked runs and the last iteration each one was
given, so `spade train --resume` continues the same tracked runs and sends every committed row
exactly once: the rows a killed run committed but never sent go first, the rows it recomputes
after the kill are not sent twice.
"""

from __future__ import annotations

import importlib.util
import json
import math
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, Protocol

from spade.files import atomic_write_text

TrackerName = Literal["trackio", "wandb", "tensorboard"]
TRACKERS: tuple[TrackerName, ...] = ("trackio", "wandb", "tensorboard")
PROJECT = "spade"
"""The trackio and W&B project every run is logged to (its name: the run directory's)."""


class Tracker(Protocol):
    def log(self, row: dict[str, float], step: int) -> None: ...
    def finish(self) -> None: ...


def scalars(row: dict[str, Any]) -> dict[str, float]:
    """The finite numbers of a metrics row (nested dicts flattened as `a/b`; bools as 0/1)."""
    out: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}/{k}" if prefix else str(k), v)
        elif isinstance(value, bool):
            out[prefix] = float(value)
        elif isinstance(value, int | float) and math.isfinite(value):
            out[prefix] = float(value)

    walk("", row)
    out.pop("iteration", None)
    return out


def _missing(name: str, package: str) -> RuntimeError:
    return RuntimeError(
        f"--log {name} needs the `{package}` package: pip install 'spade[{name}]' (or {package})"
    )


def check_available(names: Iterable[str]) -> str | None:
    """Why the named trackers cannot start (an unknown name, a package not installed), or None."""
    for name in names:  # each tracker's package has its name
        if name not in TRACKERS:
            return f"unknown tracker {name!r}; choose from {', '.join(TRACKERS)}"
        if importlib.util.find_spec(name) is None:
            return str(_missing(name, name))
    return None


class _Trackio:
    def __init__(self, name: str, config: dict[str, Any], resume: bool) -> None:
        try:
            import trackio
        except ImportError as exc:
            raise _missing("trackio", "trackio") from exc
        self._trackio = trackio
        trackio.init(
            project=PROJECT,
            name=name,
            config=config,
            resume="allow" if resume else "never",  # a run killed before its first row
            embed=False,
            auto_log_cpu=False,
            auto_log_gpu=False,
        )

    def log(self, row: dict[str, float], step: int) -> None:
        self._trackio.log(row, step=step)

    def finish(self) -> None:
        self._trackio.finish()


class _Wandb:
    def __init__(
        self, name: str, run_id: str, config: dict[str, Any], run_dir: Path, resume: bool
    ) -> None:
        try:
            import wandb
        except ImportError as exc:
            raise _missing("wandb", "wandb") from exc
        self._run = wandb.init(
            project=PROJECT,
            name=name,
            id=run_id,
            resume="allow" if resume else "never",
            config=config,
            dir=str(run_dir),
        )

    def log(self, row: dict[str, float], step: int) -> None:
        self._run.log(row, step=step)

    def finish(self) -> None:
        self._run.finish()


class _TensorBoard:
    def __init__(self, run_dir: Path, config: dict[str, Any], logged: int) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise _missing("tensorboard", "tensorboard") from exc
        # purge_step: events a killed run wrote past its last committed row are dropped
        self._writer = SummaryWriter(str(run_dir / "tensorboard"), purge_step=logged + 1)
        if logged == 0:
            self._writer.add_text("config", f"```json\n{json.dumps(config, indent=1)}\n```", 0)

    def log(self, row: dict[str, float], step: int) -> None:
        for key, value in row.items():
            self._writer.add_scalar(key, value, step)
        self._writer.flush()

    def finish(self) -> None:
        self._writer.close()


class Trackers:
    """The trackers of one run; `send(rows)` logs the committed rows not yet sent."""

    def __init__(self, run_dir: Path, names: Iterable[str], config: dict[str, Any]) -> None:
        self.run_dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self.path = run_dir / "tracking.json"
        names = list(dict.fromkeys(names))
        problem = check_available(names)
        if problem:
            raise ValueError(problem)
        state = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.state: dict[str, Any] = {
            "name": state.get("name", run_dir.resolve().name),
            "wandb_id": state.get("wandb_id", secrets.token_hex(4)),
            "logged": state.get("logged", {}),
        }
        self.open: dict[str, Tracker] = {}
        try:
            for name in names:
                self.open[name] = self._start(name, config)
        except BaseException:
            self.finish()
            raise
        self._save()

    def _start(self, name: str, config: dict[str, Any]) -> Tracker:
        logged = int(self.state["logged"].get(name, 0))
        resume = name in self.state["logged"]
        if name == "trackio":
            return _Trackio(self.state["name"], config, resume)
        if name == "wandb":
            return _Wandb(self.state["name"], self.state["wandb_id"], config, self.run_dir, resume)
        return _TensorBoard(self.run_dir, config, logged)

    def _save(self) -> None:
        for name in self.open:
            self.state["logged"].setdefault(name, 0)
        atomic_write_text(self.path, json.dumps(self.state, indent=1))

    def send(self, rows: Iterable[dict[str, Any]]) -> None:
        """Log each row (a metrics.jsonl line) to every tracker that has not had its iteration."""
        for row in rows:
            step = int(row["iteration"])
            values = scalars(row)
            sent = False
            for name, tracker in self.open.items():
                if step > int(self.state["logged"].get(name, 0)):
                    tracker.log(values, step)
                    self.state["logged"][name] = step
                    sent = True
            if sent:
                self._save()

    def finish(self) -> None:
        for tracker in self.open.values():
            tracker.finish()
        self.open = {}


def open_trackers(
    run_dir: Path, names: Iterable[str], config: dict[str, Any], committed: Callable[[], list]
) -> Trackers | None:
    """Start the named trackers (None when there are none) and send the committed rows a
    killed run did not (`committed()`: the metrics rows on disk)."""
    names = list(names)
    if not names:
        return None
    trackers = Trackers(run_dir, names, config)
    trackers.send(committed())
    return trackers
