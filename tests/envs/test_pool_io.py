"""Pools in and out: read-only access, JSONL / Parquet export, import through the sandbox
(round trip without loss, reference-format directories, rejections with their reasons), and
the `spade pool` commands."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import tyro

from spade.cli.pool_commands import pool as pool_command
from spade.envs.pool import EpisodeRow, Pool
from spade.envs.pool_io import (
    COLUMNS,
    STORED,
    ReadOnlyPool,
    export_rows,
    pool_path,
    read_export,
    read_source,
    write_export,
)
from spade.types import CheckFailure, Program, Verdict

# Three small games, each valid (probes lose, solution() wins, deterministic) and different enough
# not to be near-duplicates of each other; reference-format code: `random` and `re` come preloaded.
ECHO = '''"""Repeat the secret number shown in the prompt, doubled."""


class EchoNumberEnv:
    def __init__(self, max_turns=3):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(200, 999)
        return f"Reply \\\\boxed{{n}} with n = {self.target} doubled.", {}

    def step(self, action):
        m = re.search(r"-?\\d+", action)
        won = bool(m) and int(m.group()) == 2 * self.target
        return ("Correct!" if won else "Wrong."), (1.0 if won else 0.0), True, False, {}

    def solution(self):
        return [f"\\\\boxed{{{2 * self.target}}}"]
'''
FIRST_WORD = '''"""Say which of two words comes first alphabetically."""

WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "ivory", "jolly"]


class FirstWordEnv:
    def __init__(self, max_turns=2):
        self.max_turns = max_turns
        self.turn = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.pair = rng.sample(WORDS, 2)
        self.turn = 0
        text = " and ".join(self.pair)
        return f"Two words: {text}. Which one sorts first? Answer \\\\boxed{{word}}.", {}

    def step(self, action):
        self.turn += 1
        found = re.findall(r"\\\\boxed\\{([a-z]+)\\}", action)
        answer = found[-1] if found else ""
        if answer == min(self.pair):
            return "Yes.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "Out of tries.", -1.0, True, False, {}
        return "No, try again.", 0.0, False, False, {}

    def solution(self):
        return ["\\\\boxed{" + min(self.pair) + "}"]
'''
NEXT_TERM = '''"""Continue an arithmetic sequence by one term."""


class NextTermEnv:
    def __init__(self, max_turns=1, difficulty=1):
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        r = random.Random(seed)
        start, step = r.randint(30, 90), r.randint(25, 60) * self.difficulty
        self.terms = [start + k * step for k in range(4)]
        self.answer = start + 4 * step
        shown = ", ".join(str(t) for t in self.terms)
        return f"What comes next: {shown}, ? Reply as \\\\boxed{{number}}.", {}

    def step(self, action):
        digits = re.findall(r"\\d+", action)
        ok = len(digits) > 0 and int(digits[-1]) == self.answer
        obs = "Right, the pattern continues." if ok else f"No: it was {self.answer}."
        return obs, float(ok), True, False, {"answer": self.answer}

    def solution(self):
        return ["\\\\boxed{%d}" % self.answer]
'''
BROKEN = '"""A broken environment."""\n\n\nclass BrokenEnv(:\n    pass\n'
FAST = ["--probe-seeds", "2"]


def make_pool(path: Path) -> None:
    """A seed at iteration 0; two admitted designs and one rejected program at iteration 1;
    plain plays at 1-3, hinted plays of the designs at 1; their design windows closed at 2.

    Plain wins: echo 1/4 then 2/4 at 2 (frontier), first-word 4/4 (mastered), next-term 0/4
    (out of reach); hinted: first-word 4/4, next-term 2/4, so regrets are 0.0 and 0.5."""
    seed = Program.from_code(ECHO, source="seeds/echo.py", skill="Mathematical Reasoning")
    word = Program.from_code(FIRST_WORD, source="design:it1/0", skill="Logical Deduction")
    term = Program.from_code(
        NEXT_TERM, source="design:it1/1", skill="Pattern Recognition", hint="constant step"
    )
    broken = Program.from_code(BROKEN, source="design:it1/2", skill="Optimization")
    with Pool(path) as pool:
        pool.add_program(seed, Verdict(seed.env_id, True, (), {"bundled": True}), 0, {"seed": 1})
        for i, p in enumerate((word, term)):
            verdict = Verdict(p.env_id, True, (), {"probe_win_rate": 0.0, "seconds": 0.5})
            prov = {"exemplars": [seed.env_id], "grounding": "Tides", "regen": 0, "attempt": i}
            pool.add_program(p, verdict, 1, prov)
            pool.record_attempt(1, 0, p.skill, i, env_id=p.env_id, admitted=True)
        failure = CheckFailure("parse", "SyntaxError: invalid syntax (line 4)")
        pool.add_program(broken, Verdict(broken.env_id, False, (failure,)), 1, {"attempt": 2})
        pool.record_attempt(1, 0, "Optimization", 2, failures=[failure], reward=-1.0)
        wins = ((seed, [1, 2, 2]), (word, [4, 4, 4]), (term, [0, 0, 0]))
        for program, per_iteration in wins:
            for it, w in enumerate(per_iteration, 1):
                rows = [
                    EpisodeRow(program.env_id, it, s, False, 1.0 if s < w else 0.0, 1 + s % 3, 9)
                    for s in range(4)
                ]
                pool.record_episodes(rows)
        for program, w in ((word, 4), (term, 2)):
            pool.record_episodes(
                EpisodeRow(program.env_id, 1, s, True, 1.0 if s < w else 0.0, 2, 9)
                for s in range(4)
            )
        pool.record_designer_reward(
            word.env_id,
            0,
            2,
            0.1,
            win_rate=1.0,
            regret=0.0,
            hint_ok=False,
            hint_reason="plain win rate 1.000 outside [0.05, 0.95]",
        )
        pool.record_designer_reward(
            term.env_id,
            0,
            2,
            0.6,
            win_rate=0.0,
            regret=0.5,
            plain_mean=0.0,
            hinted_mean=0.5,
            hint_ok=True,
        )
        for it in (1, 2, 3):
            pool.record_bands(it)


def cli(*args: str | Path) -> int:
    return int(tyro.cli(pool_command, args=[str(a) for a in args]))


@pytest.fixture
def pool_file(tmp_path: Path) -> Path:
    path = tmp_path / "run" / "pool.sqlite"
    make_pool(path)
    return path


def test_export_rows_are_flat_and_carry_statistics(pool_file: Path) -> None:
    with ReadOnlyPool(pool_file.parent) as pool:
        rows = {r["source"]: r for r in export_rows(pool)}
    assert all(list(r) == list(COLUMNS) for r in rows.values())
    assert all(
        isinstance(v, (str, int, float, bool, type(None)))
        for r in rows.values()
        for v in r.values()
    )
    word, term, seed = rows["design:it1/0"], rows["design:it1/1"], rows["seeds/echo.py"]
    assert (seed["plays"], seed["win_rate"], seed["band"]) == (12, 5 / 12, "frontier")
    assert (word["band"], word["hinted_win_rate"], word["regret"], word["hint_ok"]) == (
        "mastered",
        1.0,
        0.0,
        False,
    )
    assert (term["band"], term["hinted_plays"], term["regret"], term["designer_reward"]) == (
        "out_of_reach",
        4,
        0.5,
        0.6,
    )
    assert json.loads(term["provenance"])["grounding"] == "Tides"
    broken = rows["design:it1/2"]
    assert broken["admitted"] is False and broken["band"] is None and broken["plays"] == 0
    assert json.loads(broken["verdict"])["failures"][0]["check"] == "parse"


def test_read_only_pool_refuses_writes_and_reads_while_a_writer_holds_a_transaction(
    pool_file: Path,
) -> None:
    with Pool(pool_file) as writer, writer.transaction():
        writer.record_bands(4)  # uncommitted: the reader sees the last committed state
        with ReadOnlyPool(pool_file) as reader:
            assert [b["iteration"] for b in reader.band_history()] == [1, 2, 3]
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                reader.record_bands(5)
    with pytest.raises(FileNotFoundError):
        ReadOnlyPool(pool_file.parent / "missing.sqlite")


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_export_file_round_trip_is_exact(pool_file: Path, tmp_path: Path, suffix: str) -> None:
    if suffix == "parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"pool.{suffix}"
    assert cli("export", pool_file.parent, "--out", out) == 0
    with ReadOnlyPool(pool_file) as pool:
        rows = list(export_rows(pool))
    assert read_export(out) == rows  # every field, None stays None, floats bit-exact


def test_exports_load_with_datasets(
    pool_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with ReadOnlyPool(pool_file) as pool:
        rows = list(export_rows(pool))
    for builder, suffix in (("parquet", "parquet"), ("json", "jsonl")):
        path = tmp_path / f"pool.{suffix}"
        write_export(rows, path)
        data = datasets.load_dataset(
            builder, data_files=str(path), split="train", cache_dir=str(tmp_path / "hf")
        )
        assert data.column_names == list(COLUMNS)
        assert list(data) == rows


def test_export_import_export_loses_nothing(
    pool_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pool.jsonl"
    assert cli("export", pool_file, "--out", out) == 0
    target = tmp_path / "imported"
    assert cli("import", out, "--into", target, "--json", *FAST) == 1  # the broken one
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["source"], r["added"]) for r in lines] == [
        (f"{out}#0", True),
        (f"{out}#1", True),
        (f"{out}#2", True),
        (f"{out}#3", False),
    ]
    assert [f["check"] for f in lines[3]["failures"]] == ["parse"]
    before = read_export(out)
    with ReadOnlyPool(target) as pool:
        after = {r["env_id"]: r for r in export_rows(pool)}
    assert len(after) == 3
    for row in before[:3]:
        again = after[row["env_id"]]
        assert {k: again[k] for k in STORED} == {k: row[k] for k in STORED}
        provenance = json.loads(again["provenance"])
        assert provenance["imported_from"].startswith(str(out))
        origin = {
            k: json.dumps(v, sort_keys=True) if k in ("verdict", "provenance") else v
            for k, v in provenance["origin"].items()
        }
        assert origin == {k: v for k, v in row.items() if k not in STORED}
        assert again["admitted"] and json.loads(again["verdict"])["admitted"]
    # importing the same export again: every environment is now a duplicate
    assert cli("import", out, "--into", target, "--json", *FAST) == 1
    checks = [
        json.loads(line)["failures"][0]["check"] for line in capsys.readouterr().out.splitlines()
    ]
    assert checks == ["duplicate", "duplicate", "duplicate", "parse"]


def test_import_rejects_a_row_whose_code_does_not_match_its_sha256(
    pool_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ReadOnlyPool(pool_file) as pool:
        row = next(export_rows(pool))
    src = tmp_path / "tampered.jsonl"
    write_export([{**row, "code": row["code"].replace("200, 999", "1, 9")}], src)
    assert cli("import", src, "--into", tmp_path / "p.sqlite", "--json") == 1
    [result] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [f["check"] for f in result["failures"]] == ["sha256"] and not result["added"]
    (tmp_path / "bad.jsonl").write_text('{"code": 1}\n')
    assert cli("import", tmp_path / "bad.jsonl", "--into", tmp_path / "p.sqlite") == 2
    assert "no `code` string" in capsys.readouterr().err


def test_import_reference_directory_takes_skills_from_file_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "released"
    src.mkdir()
    files = {
        "game_00001_000_mathematical_reasoning.py": ECHO,
        "game_00001_001_logical_deduction.py": FIRST_WORD,
        "game_00002_000_pattern_recognition.py": NEXT_TERM,
        "game_00002_001_optimization.py": BROKEN,
        "notes_env.py": ECHO.replace("Repeat", "Echo back"),  # no reference name, no skill line
    }
    for name, code in files.items():
        (src / name).write_text(code)
    assert [c.program.skill for c in read_source(src)] == [
        "Mathematical Reasoning",
        "Logical Deduction",
        "Pattern Recognition",
        "Optimization",
        "",
    ]
    into = tmp_path / "pool.sqlite"
    assert cli("import", src, "--into", into, "--json", *FAST) == 1
    rows = {
        Path(r["source"]).name: r for r in map(json.loads, capsys.readouterr().out.splitlines())
    }
    assert {name for name, r in rows.items() if r["added"]} == set(list(files)[:3])
    assert rows["game_00002_001_optimization.py"]["failures"] == [
        {"check": "parse", "reason": "SyntaxError: invalid syntax (line 4)"}
    ]
    assert rows["notes_env.py"]["failures"][0]["check"] == "skill"
    with ReadOnlyPool(into) as pool:
        stored = {p.skill: p for p in pool.admitted()}
        assert set(stored) == {"Mathematical Reasoning", "Logical Deduction", "Pattern Recognition"}
        [entry] = [r for r in export_rows(pool) if r["skill"] == "Logical Deduction"]
        assert json.loads(entry["provenance"]) == {
            "imported_from": str(src / "game_00001_001_logical_deduction.py"),
            "origin": {},
        }


def test_ls_filters_and_sorts(
    pool_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")

    def ls(*args: str) -> list[str]:
        assert cli("ls", pool_file.parent, "--json", *args) == 0
        return [json.loads(line)["source"] for line in capsys.readouterr().out.splitlines()]

    assert ls() == ["seeds/echo.py", "design:it1/0", "design:it1/1", "design:it1/2"]
    assert ls("--sort", "regret") == [
        "design:it1/1",
        "design:it1/0",
        "seeds/echo.py",
        "design:it1/2",
    ]
    assert ls("--sort", "win_rate", "--admitted") == [
        "design:it1/0",
        "seeds/echo.py",
        "design:it1/1",
    ]
    assert ls("--rejected") == ["design:it1/2"]
    assert ls("--band", "mastered") == ["design:it1/0"]
    assert ls("--skill", "pattern_recognition") == ["design:it1/1"]
    assert ls("--iteration", "1", "--sort", "plays", "--limit", "1") == ["design:it1/0"]
    assert cli("ls", pool_file) == 0
    table = capsys.readouterr().out
    assert "4 environments" in table and "rejected (parse)" in table


def test_show_prints_code_hint_verdict_and_history(
    pool_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    term = Program.from_code(NEXT_TERM).env_id
    assert cli("show", pool_file, term[:8]) == 0
    out = capsys.readouterr().out
    for text in (
        term,
        "constant step",
        "admitted",
        "play history",
        "hinted",
        "regret 0.50",
        "class NextTermEnv",
    ):
        assert text in out
    assert cli("show", pool_file, "zz") == 2
    assert "no environment" in capsys.readouterr().err


def test_pool_path_and_missing_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run").mkdir()
    assert pool_path(tmp_path / "run") == tmp_path / "run" / "pool.sqlite"
    assert pool_path(tmp_path / "new-run") == tmp_path / "new-run" / "pool.sqlite"
    assert pool_path(tmp_path / "p.sqlite") == tmp_path / "p.sqlite"
    assert cli("ls", tmp_path / "run") == 2
    assert "no pool database" in capsys.readouterr().err
