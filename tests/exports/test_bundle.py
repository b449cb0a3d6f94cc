"""The bundle every export format carries: manifest, hashes, names, turn cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spade.envs.bundle import MANIFEST, BundleError, bundle_programs, read_bundle, write_bundle
from spade.exports import export
from spade.types import Program


def test_round_trip_keeps_code_skill_and_hint(tmp_path: Path, programs: list[Program]) -> None:
    envs = write_bundle(programs + programs[:1], tmp_path, "demo", max_turns=7)
    assert [e.env_id for e in envs] == [p.env_id for p in programs]  # the duplicate dropped
    bundle = read_bundle(tmp_path)
    assert bundle.name == "demo" and bundle.max_turns == 7
    back = bundle_programs(bundle)
    assert [p.code for p in back] == [p.code for p in programs]
    assert [p.skill for p in back] == [p.skill for p in programs]
    assert back[0].hint == programs[0].hint
    assert bundle.find(1).env_id == programs[1].env_id
    assert bundle.find(programs[2].env_id[:10]).env_id == programs[2].env_id
    with pytest.raises(KeyError, match="out of range"):
        bundle.find(3)


def test_a_file_edited_after_export_is_refused(tmp_path: Path, programs: list[Program]) -> None:
    envs = write_bundle(programs, tmp_path, "demo")
    path = tmp_path / envs[1].file
    path.write_text(path.read_text() + "\n# changed\n")
    with pytest.raises(BundleError, match="changed after export"):
        read_bundle(tmp_path)


def test_a_manifest_pointing_outside_the_bundle_is_refused(
    tmp_path: Path, programs: list[Program]
) -> None:
    write_bundle(programs[:1], tmp_path / "b", "demo")
    manifest = json.loads((tmp_path / "b" / MANIFEST).read_text())
    (tmp_path / "outside.py").write_text(programs[0].code)
    manifest["envs"][0]["file"] = "../outside.py"
    (tmp_path / "b" / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(BundleError, match="outside the bundle"):
        read_bundle(tmp_path / "b")


@pytest.mark.parametrize("name", ["Demo", "1demo", "my-envs", ""])
def test_bad_names_and_empty_exports_are_errors(
    tmp_path: Path, programs: list[Program], name: str
) -> None:
    with pytest.raises(BundleError, match="export name"):
        export(programs, tmp_path, "gem", name)
    with pytest.raises(BundleError, match="nothing to export"):
        export([], tmp_path, "gem", "demo")
    with pytest.raises(BundleError, match="not a spade export"):
        read_bundle(tmp_path)


@pytest.mark.parametrize(
    ("fmt", "bundle_dir", "adapter"),
    [
        ("openenv", ".", "server/app.py"),
        ("verifiers", "demo", "demo/__init__.py"),
        ("gem", "demo", "demo/__init__.py"),
    ],
)
def test_each_format_has_its_layout(
    tmp_path: Path, programs: list[Program], fmt: str, bundle_dir: str, adapter: str
) -> None:
    root = export(programs, tmp_path, fmt, "demo")  # type: ignore[arg-type]
    assert root == (tmp_path / bundle_dir)
    assert (tmp_path / adapter).is_file() and (tmp_path / "pyproject.toml").is_file()
    assert len(read_bundle(root).envs) == 3
    # The adapters only read the programs as text: none of them is imported or copied in.
    for py in tmp_path.rglob("*.py"):
        if "envs" not in py.parts:
            assert "MarkerEnv" not in py.read_text()
