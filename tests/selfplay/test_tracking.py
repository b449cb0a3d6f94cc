"""`spade train --log`: each tracker, with its real library in offline mode, reads back what it was
given: the config, every committed row once, and after a resume the same run continued (the rows
a killed run recomputes are not sent twice). trackio and W&B run in a child process, each with its
own storage folder (both read their folder from the environment when imported)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from spade.selfplay import tracking

ROWS = [
    {"iteration": i, "plain_win_rate": i / 10, "time/play_s": 1.5 * i, "near_subset_win_rate": None}
    for i in range(1, 6)
]
CONFIG = {"seed": 3, "ppo": {"learning_rate": 5e-5}}


def run_twice(run_dir: Path, name: str) -> None:
    """Rows 1-3, then a 'resumed' process that recomputes 2-3 and goes on to 5 (the driver)."""
    first = tracking.Trackers(run_dir, [name], CONFIG)
    first.send(ROWS[:3])
    first.finish()
    if name == "wandb":  # W&B names an offline segment by the second it started: not the same
        time.sleep(1.1)
    again = tracking.Trackers(run_dir, [name], CONFIG)
    again.send(ROWS[1:])
    again.finish()


DRIVER = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import test_tracking
test_tracking.run_twice(Path({run_dir!r}), {name!r})
"""


def in_child(run_dir: Path, name: str, env: dict[str, str]) -> None:
    code = DRIVER.format(tests=str(Path(__file__).parent), run_dir=str(run_dir), name=name)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_scalars_keep_finite_numbers_and_flatten() -> None:
    row = {"iteration": 2, "a": 1, "b": None, "c": float("nan"), "d": {"e": 0.5}, "f": True}
    assert tracking.scalars(row) == {"a": 1.0, "d/e": 0.5, "f": 1.0}


def test_unknown_or_missing_trackers_are_named_before_anything_runs(monkeypatch) -> None:
    assert "unknown tracker 'mlflow'" in (tracking.check_available(["mlflow"]) or "")
    monkeypatch.setattr(tracking.importlib.util, "find_spec", lambda name: None)
    assert "pip install 'spade[wandb]'" in (tracking.check_available(["wandb"]) or "")
    assert tracking.check_available([]) is None


def test_tensorboard_reads_back_every_row_once_across_a_resume(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_twice(tmp_path, "tensorboard")
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("plain_win_rate")] == [
        (i, pytest.approx(i / 10)) for i in range(1, 6)
    ]
    assert [e.step for e in events.Scalars("time/play_s")] == [1, 2, 3, 4, 5]
    assert "near_subset_win_rate" not in events.Tags()["scalars"]  # None is not a number
    assert json.loads((tmp_path / "tracking.json").read_text())["logged"] == {"tensorboard": 5}


def test_trackio_continues_the_same_run(tmp_path: Path) -> None:
    pytest.importorskip("trackio")
    store = tmp_path / "trackio"
    in_child(tmp_path / "run", "trackio", {"TRACKIO_DIR": str(store)})
    code = """
import json
from trackio.sqlite_storage import SQLiteStorage
runs, logs = SQLiteStorage.get_runs("spade"), SQLiteStorage.get_logs("spade", "run")
print(json.dumps([runs, logs], default=str))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "TRACKIO_DIR": str(store)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    runs, logs = json.loads(out.stdout.splitlines()[-1])
    assert [r["name"] if isinstance(r, dict) else r for r in runs] == ["run"]  # one run, resumed
    assert [(row["step"], row["plain_win_rate"]) for row in logs] == [
        (i, pytest.approx(i / 10)) for i in range(1, 6)
    ]


def wandb_records(path: Path) -> list[Any]:
    """The records of a W&B transaction log (`run-ID.wandb`: the leveldb log format)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    out, pending, offset = [], b"", 7
    block = 32768
    while offset + 7 <= len(data):
        if block - offset % block < 7:  # a block's trailer
            offset += block - offset % block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[offset : offset + 7])
        if kind == 0 and length == 0:
            break
        chunk = data[offset + 7 : offset + 7 + length]
        offset += 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):  # FULL or LAST: a whole record
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            out.append(record)
            pending = b""
    return out


def test_wandb_offline_continues_the_same_run(tmp_path: Path) -> None:
    pytest.importorskip("wandb")
    run_dir = tmp_path / "run"
    in_child(run_dir, "wandb", {"WANDB_MODE": "offline", "WANDB_SILENT": "true"})
    run_id = json.loads((run_dir / "tracking.json").read_text())["wandb_id"]
    logs = sorted((run_dir / "wandb").glob(f"offline-run-*-{run_id}/run-{run_id}.wandb"))
    assert logs, list((run_dir / "wandb").iterdir())
    steps: dict[int, float] = {}
    config: dict[str, Any] = {}
    for log in logs:
        for record in wandb_records(log):
            if record.HasField("history"):
                items = {i.key or "/".join(i.nested_key): i.value_json for i in record.history.item}
                step = int(record.history.step.num)
                assert step not in steps, f"step {step} logged twice"
                steps[step] = json.loads(items["plain_win_rate"])
            for updates in (
                record.config.update if record.HasField("config") else (),
                record.run.config.update if record.HasField("run") else (),
            ):
                config.update({i.key: json.loads(i.value_json) for i in updates})
    assert steps == {i: pytest.approx(i / 10) for i in range(1, 6)}
    assert config["seed"] == 3 and config["ppo"]["learning_rate"] == 5e-5
