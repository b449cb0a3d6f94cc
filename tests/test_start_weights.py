"""The weights a run starts from (spade/start_weights.py): hashed by content, recorded on the
first start, and a start from other weights refused, through `spade train` too (exit status 3,
before the run directory changes)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from spade import start_weights
from spade.start_weights import EXIT_OTHER_START, OtherStartError


def _folder(path: Path, weights: bytes) -> Path:
    path.mkdir(parents=True)
    (path / "model.safetensors").write_bytes(weights)
    (path / "config.json").write_text("{}")
    return path


def test_the_hash_is_of_the_weights_only(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", b"weights")
    b = _folder(tmp_path / "b", b"weights")
    (b / "config.json").write_text('{"other": 1}')  # not weights: not hashed
    c = _folder(tmp_path / "c", b"weightz")
    assert start_weights.weights_sha256(a) == start_weights.weights_sha256(b)
    assert start_weights.weights_sha256(a) == hashlib.sha256(b"weights").hexdigest()  # sha256sum
    assert start_weights.weights_sha256(a) != start_weights.weights_sha256(c)
    (a / "extra.bin").write_bytes(b"")  # another weight file, even empty, is part of it
    assert start_weights.weights_sha256(a) != start_weights.weights_sha256(b)
    assert start_weights.weights_sha256("HuggingFaceTB/SmolLM2-135M-Instruct") is None
    assert start_weights.identity(tmp_path / "empty") is None


def test_the_first_start_is_recorded_and_a_start_from_other_weights_refused(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    first = start_weights.identity(_folder(tmp_path / "amd", b"rounded one way"))
    other = start_weights.identity(_folder(tmp_path / "intel", b"rounded another way"))
    assert first is not None and other is not None
    start_weights.settle(run, first)
    assert start_weights.recorded(run) == first
    start_weights.settle(run, dict(first))  # the same weights again: fine
    with pytest.raises(OtherStartError, match=first["weights_sha256"][:12]):
        start_weights.settle(run, other)
    assert start_weights.recorded(run) == first  # unchanged
    start_weights.settle(run, None)  # nothing to hash (a served model): nothing checked


def test_an_abbreviated_record_names_the_weights_with_its_prefix_and_suffix(
    tmp_path: Path,
) -> None:
    sha = "594a4359" + "0" * 50 + "5f372d"
    assert start_weights.same_weights("594a4359...5f372d", sha)
    assert not start_weights.same_weights("594a4359...5f372e", sha)
    assert not start_weights.same_weights("8ebfb4c7...5f372d", sha)
    assert not start_weights.same_weights("594a...2d", sha)  # too short to name anything
    assert not start_weights.same_weights(sha[:12], sha)  # a bare prefix is not a record
    run = tmp_path / "run"
    run.mkdir()
    (run / start_weights.START_FILE).write_text(json.dumps({"weights_sha256": "594a4359...5f372d"}))
    start_weights.settle(run, {"weights_sha256": sha, "folder": "warm"})  # accepted
    with pytest.raises(OtherStartError):
        start_weights.settle(run, {"weights_sha256": "8ebfb4c7" + sha[8:], "folder": "warm"})


TRAIN_ARGS = [
    "--model",
    "tiny-test",
    "--iterations",
    "1",
    "--no-heldout-eval",
    "--design.envs-per-regen",
    "1",
    "--design.active-skills",
    "1",
    "--design.max-tokens",
    "8",
    "--play.plays-per-env",
    "2",
    "--play.active-envs",
    "1",
    "--play.max-tokens",
    "4",
    "--validator.probe-seeds",
    "1",
    "--validator.solution-seeds",
    "1",
]


def test_spade_train_records_its_start_and_refuses_other_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path / "cache"))
    from spade.backends.tiny import tiny_model_path
    from spade.cli.main import main

    # a run directory whose record names other weights (another machine's warm start)
    refused = tmp_path / "refused"
    refused.mkdir()
    elsewhere = {"weights_sha256": "0" * 64, "folder": "tiny-test", "why": "another machine"}
    (refused / start_weights.START_FILE).write_text(json.dumps(elsewhere))
    assert main(["train", "--run-dir", str(refused), *TRAIN_ARGS]) == EXIT_OTHER_START
    assert start_weights.recorded(refused) == elsewhere
    assert not (refused / "state.json").exists() and not (refused / "pool.sqlite").exists()

    run = tmp_path / "run"
    assert main(["train", "--run-dir", str(run), *TRAIN_ARGS]) == 0
    folder = tiny_model_path("tiny-test")
    expected = start_weights.weights_sha256(folder)
    assert expected is not None
    assert start_weights.recorded(run) == {"weights_sha256": expected, "folder": folder.name}
    summary = json.loads((run / "summary.json").read_text())
    assert summary["model"]["weights_sha256"] == expected
