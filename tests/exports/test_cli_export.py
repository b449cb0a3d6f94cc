"""`spade pool export --format openenv|verifiers|gem`, and `spade validate` / `spade pool import`
of an exported directory (its manifest's environments only, not the adapters beside them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tyro

from spade.cli.main import main
from spade.cli.pool_commands import pool as pool_command
from spade.envs.bundle import package_name, read_bundle
from spade.envs.pool import Pool
from spade.types import CheckFailure, Program, Verdict


def pool_cli(*args: object) -> int:
    return int(tyro.cli(pool_command, args=[str(a) for a in args]))


@pytest.fixture
def pool_dir(tmp_path: Path, programs: list[Program]) -> Path:
    """The seed and the compact design admitted, the marker program rejected."""
    run = tmp_path / "run"
    run.mkdir()
    with Pool(run / "pool.sqlite") as pool:
        for p in programs[:2]:
            pool.add_program(p, Verdict(p.env_id, True, ()), 0, {})
        bad = programs[2]
        pool.add_program(bad, Verdict(bad.env_id, False, (CheckFailure("probe", "x"),)), 1, {})
    return run


@pytest.mark.parametrize("fmt", ["openenv", "verifiers", "gem"])
def test_export_writes_the_admitted_environments(
    pool_dir: Path, tmp_path: Path, programs: list[Program], fmt: str
) -> None:
    out = tmp_path / "My Envs"
    assert pool_cli("export", pool_dir, "--out", out, "--format", fmt, "--max-turns", 9) == 0
    bundle = read_bundle(out if fmt == "openenv" else out / "my_envs")
    assert bundle.name == "my_envs" and bundle.max_turns == 9
    assert [e.env_id for e in bundle.envs] == [p.env_id for p in programs[:2]]


def test_export_refuses_a_file_and_a_bad_name(pool_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    assert pool_cli("export", pool_dir, "--out", tmp_path / "f", "--format", "gem") == 2
    assert (
        pool_cli("export", pool_dir, "--out", tmp_path / "d", "--format", "gem", "--name", "X") == 2
    )
    assert package_name(Path("/x/2024 envs")) == "spade_2024_envs"


def test_validate_and_import_read_only_the_manifest(
    pool_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "exported"
    assert pool_cli("export", pool_dir, "--out", out, "--format", "openenv") == 0
    capsys.readouterr()
    assert main(["validate", str(out), "--json", "--probe-seeds", "4"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 and all(r["admitted"] for r in rows)
    assert all("/envs/" in r["path"] for r in rows)
    assert pool_cli("import", out, "--into", tmp_path / "new", "--probe-seeds", "4") == 0
    with Pool(tmp_path / "new" / "pool.sqlite") as pool:
        assert len(list(pool.export_rows())) == 2
    env_file = next((out / "envs").glob("*.py"))
    env_file.write_text(env_file.read_text() + "\n")
    assert main(["validate", str(out)]) == 2
    assert "changed after export" in capsys.readouterr().err
