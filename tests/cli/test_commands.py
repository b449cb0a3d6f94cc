"""Every `spade` subcommand from a fresh install: its `--help`, and one real run on tiny inputs.

The model commands (train, design, eval, bootstrap) run on the ~1M-parameter `tiny-test` preset,
built into a throw-away cache: no test depends on the default model or on a download.
validate, play and doctor have their own detailed tests in test_cli.py; report and pool run here
on the run directory that `spade train` wrote.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade.cli.main import COMMANDS, MODEL_COMMANDS
from tests.support.cli import PROGRAMS, run_spade

CONTRACT = PROGRAMS / "contract"
REFERENCE = PROGRAMS / "reference"
TINY = ["--model", "tiny-test"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spade-cache")


def run(cache: Path, *args: str | Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return run_spade(*args, timeout=timeout, cache=cache)


def rows(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


# --- help -------------------------------------------------------------------------------------

SUBCOMMANDS = [
    *COMMANDS,
    "pool ls",
    "pool show",
    "pool export",
    "pool import",
]


def test_top_level_help_lists_every_subcommand(cache: Path) -> None:
    result = run(cache, "--help")
    assert result.returncode == 0, result.stderr
    for name in COMMANDS:
        assert name in result.stdout, name
    assert set(MODEL_COMMANDS) <= set(COMMANDS)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_has_help(command: str, cache: Path) -> None:
    result = run(cache, *command.split(), "--help")
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"usage: spade {command}" in result.stdout, result.stdout[:500]
    assert "Traceback" not in result.stdout + result.stderr


# --- commands without a model ----------------------------------------------------------------


def test_seeds_lists_the_bundled_environments(cache: Path) -> None:
    result = run(cache, "seeds", "--json")
    assert result.returncode == 0, result.stderr
    seeds = rows(result.stdout)
    assert len(seeds) >= 6 and all(len(r["env_id"]) == 64 and r["skill"] for r in seeds)
    heldout = run(cache, "seeds", "--heldout", "--json")
    assert heldout.returncode == 0 and rows(heldout.stdout)
    table = run(cache, "seeds")
    assert table.returncode == 0 and "bundled seed environments" in table.stdout


# --- train, then report and pool on its run directory ------------------------------------------


@pytest.fixture(scope="module")
def run_dir(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("train") / "run"
    result = run(
        cache,
        "train",
        *TINY,
        "--run-dir",
        path,
        "--iterations",
        "1",
        "--no-heldout-eval",
        "--design.envs-per-regen",
        "2",
        "--design.active-skills",
        "1",
        "--design.max-tokens",
        "64",
        "--play.plays-per-env",
        "2",
        "--play.active-envs",
        "2",
        "--play.max-turns",
        "2",
        "--play.max-tokens",
        "8",
        "--validator.probe-seeds",
        "1",
        "--validator.solution-seeds",
        "1",
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "self-play summary" in result.stdout
    yield path


def test_train_runs_one_iteration(run_dir: Path) -> None:
    assert json.loads((run_dir / "state.json").read_text())["iteration"] == 1
    (metrics,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert metrics["iteration"] == 1 and metrics["episodes"] > 0
    assert json.loads((run_dir / "config.json").read_text())["model"]["model"] == "tiny-test"


def test_train_refuses_a_run_directory_that_exists(cache: Path, run_dir: Path) -> None:
    result = run(cache, "train", *TINY, "--run-dir", run_dir, "--iterations", "1")
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr


def test_report_plots_the_run(cache: Path, run_dir: Path, tmp_path: Path) -> None:
    result = run(cache, "report", run_dir, "--out", tmp_path / "report")
    assert result.returncode == 0, result.stderr[-2000:]
    html = tmp_path / "report" / "report.html"
    assert html.is_file() and "<html" in html.read_text()[:500].lower()


def test_pool_ls_show_export_import(cache: Path, run_dir: Path, tmp_path: Path) -> None:
    listed = run(cache, "pool", "ls", run_dir, "--json")
    assert listed.returncode == 0, listed.stderr
    members = rows(listed.stdout)
    assert members and all(len(m["env_id"]) == 64 for m in members)
    table = run(cache, "pool", "ls", run_dir, "--limit", "2")
    assert table.returncode == 0 and members[0]["skill"] in table.stdout

    shown = run(cache, "pool", "show", run_dir, members[0]["env_id"][:12])
    assert shown.returncode == 0, shown.stderr
    assert members[0]["env_id"] in shown.stdout

    export = tmp_path / "pool.jsonl"
    exported = run(cache, "pool", "export", run_dir, "--out", export)
    assert exported.returncode == 0, exported.stderr
    lines = export.read_text().splitlines()
    assert len(lines) == len(members) and all("code" in json.loads(line) for line in lines)

    one = tmp_path / "one.jsonl"
    one.write_text(lines[0] + "\n")
    imported = run(cache, "pool", "import", one, "--into", tmp_path / "new", "--json")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    (row,) = rows(imported.stdout)
    assert row["admitted"] is True and row["env_id"] == json.loads(lines[0])["env_id"]

    reference = REFERENCE / "game_00003_001_multi-step_workflows.py"
    imported = run(cache, "pool", "import", reference, "--into", tmp_path / "new", "--json")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert [r["skill"] for r in rows(imported.stdout)] == ["Multi-Step Workflows"]


# --- design, eval, bootstrap --------------------------------------------------------------------


def test_design_records_every_attempt(cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "designed"
    result = run(
        cache,
        "design",
        out,
        *TINY,
        "--count",
        "1",
        "--max-rounds",
        "1",
        "--batch",
        "2",
        "--max-tokens",
        "48",
        "--skills",
        "Logical Deduction",
        "--format",
        "gem",
    )
    # an untrained 1M-parameter model writes no valid environment: exit 1, every attempt logged
    assert result.returncode in (0, 1), result.stderr[-2000:]
    assert "environments admitted into" in result.stdout
    attempts = [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]
    assert len(attempts) == 2
    for attempt in attempts:
        assert attempt["skill"] == "Logical Deduction"
        verdict = attempt["verdict"]
        assert attempt["admitted"] or attempt["error"] or (verdict and verdict["failures"])
    assert (out / "pool.sqlite").is_file()
    admitted = sum(a["admitted"] for a in attempts)
    assert (out / "gem" / "designed" / "spade_envs.json").is_file() == (admitted > 0)


def test_eval_prints_json_and_a_table(cache: Path, run_dir: Path) -> None:
    env = CONTRACT / "good_guess.py"
    common = ["--seeds", "1", "--max-turns", "2", "--max-tokens", "8"]
    result = run(cache, "eval", env, *TINY, *common, "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    (summary,) = rows(result.stdout)
    assert summary["overall"]["episodes"] == 1
    assert set(summary["by_skill"]) == {"Mathematical Reasoning"}
    table = run(cache, "eval", env, "--run-dir", run_dir, *common)  # the run's checkpoint
    assert table.returncode == 0, table.stderr[-2000:]
    assert "win rate over 1 environments x 1 seeds" in table.stdout


def test_eval_refuses_a_checkpoint_over_other_starting_weights(
    cache: Path, run_dir: Path, tmp_path: Path
) -> None:
    """A checkpoint holds the trained parameters only: over other starting weights than the run
    recorded it would be another model, so `spade eval --run-dir` refuses before loading it."""
    moved = tmp_path / "run"
    shutil.copytree(run_dir, moved)
    record = json.loads((moved / "start_model.json").read_text())
    record["weights_sha256"] = "0" * 64
    (moved / "start_model.json").write_text(json.dumps(record))
    env = CONTRACT / "good_guess.py"
    result = run(cache, "eval", env, "--run-dir", moved, "--seeds", "1", "--max-turns", "2")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "starts from weights sha256 000000000000" in " ".join(result.stdout.split())


@pytest.mark.slow
def test_bootstrap_with_a_tiny_budget(cache: Path) -> None:
    result = run(cache, "bootstrap", *TINY, "--steps", "2", "--no-measure")
    assert result.returncode == 0, result.stderr[-2000:]
    folder = Path(result.stdout.split("warm-started model:")[1].split()[0])
    meta = json.loads((folder / "spade_bootstrap.json").read_text())
    assert meta["finished"] and meta["steps"] == 2
    bad = run(cache, "bootstrap", *TINY, "--steps", "0")
    assert bad.returncode == 2 and "must be positive" in bad.stdout
