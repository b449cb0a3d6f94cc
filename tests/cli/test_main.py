"""The real `spade` command line, run as a subprocess: validate, play, doctor, --help."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from spade.sandbox import Sandbox
from tests.support.cli import PROGRAMS, ROOT, run_spade

CONTRACT = PROGRAMS / "contract"
SEED_GAME = ROOT / "spade" / "seeds" / "games" / "mathematical_reasoning_fraction_bisection.py"
LAYERS = (
    "network_namespace",
    "private_tmpfs",
    "cgroup",
    "rlimits",
    "landlock",
    "unprivileged_uid",
    "seccomp",
)


def spade(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_spade(*args, timeout=timeout)


def rows(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def copy_envs(dest: Path, *names: str) -> Path:
    dest.mkdir()
    for name in names:
        shutil.copy(CONTRACT / name, dest / name)
    return dest


# --- validate ---------------------------------------------------------------------------------


def test_validate_json_lines_mixed_dir(tmp_path: Path) -> None:
    envs = copy_envs(
        tmp_path / "envs",
        "good_guess.py",
        "good_tool_prose.py",
        "bad_syntax.py",
        "bad_always_wins.py",
        "bad_answer_in_question.py",
    )
    result = spade("validate", "--json", envs, "--probe-seeds", "2")  # fewer probe episodes: faster
    assert result.returncode == 1, result.stderr
    by_name = {Path(row["path"]).name: row for row in rows(result.stdout)}
    assert set(by_name) == {
        "good_guess.py",
        "good_tool_prose.py",
        "bad_syntax.py",
        "bad_always_wins.py",
        "bad_answer_in_question.py",
    }  # exactly one line per environment
    for name, row in by_name.items():
        assert {"path", "env_id", "admitted", "failures"} <= set(row)
        assert Path(row["path"]) == envs / name
        assert len(row["env_id"]) == 64
        for failure in row["failures"]:
            assert set(failure) == {"check", "reason"} and failure["reason"]
        # the report: every failure as an error row with its stable name and RFC 008 counterpart
        errors = [c for c in row["checks"] if c["severity"] == "error"]
        assert [(c["check"], c["reason"]) for c in errors] == [
            (f["check"], f["reason"]) for f in row["failures"]
        ]
        assert all(set(c) == {"check", "severity", "rfc008", "reason"} for c in row["checks"])
    assert by_name["good_guess.py"]["admitted"] is True
    assert by_name["good_guess.py"]["failures"] == []
    assert by_name["good_guess.py"]["skill"] == "Mathematical Reasoning"
    assert by_name["good_tool_prose.py"]["admitted"] is True
    assert by_name["bad_syntax.py"]["admitted"] is False
    assert [f["check"] for f in by_name["bad_syntax.py"]["failures"]] == ["parse"]
    assert {f["check"] for f in by_name["bad_always_wins.py"]["failures"]} == {"not_trivial"}
    (leak,) = by_name["bad_answer_in_question.py"]["checks"]
    assert (leak["check"], leak["severity"]) == ("answer_leak", "error")
    assert leak["rfc008"] == "semantic.no_solution_leakage"
    (prose,) = by_name["good_tool_prose.py"]["checks"]  # admitted with a warning
    assert (prose["check"], prose["severity"]) == ("solution_replay", "warning")


def test_validate_all_admitted_exits_zero(tmp_path: Path) -> None:
    envs = copy_envs(tmp_path / "envs", "good_guess.py", "good_tool_multiturn.py")
    result = spade("validate", "--json", envs, "--probe-seeds", "2")
    assert result.returncode == 0, result.stderr
    assert [row["admitted"] for row in rows(result.stdout)] == [True, True]


def test_validate_single_file_human_output() -> None:
    result = spade("validate", CONTRACT / "bad_solution_loses.py", "--probe-seeds", "2")
    assert result.returncode == 1
    assert "rejected" in result.stderr and "solvable" in result.stderr
    assert "0 admitted, 1 rejected" in result.stderr


def test_validate_pool_option() -> None:
    result = spade(
        "validate",
        "--json",
        CONTRACT / "bad_near_duplicate.py",
        "--probe-seeds",
        "2",
        "--pool",
        CONTRACT / "good_guess.py",
    )
    assert result.returncode == 1
    (row,) = rows(result.stdout)
    assert [f["check"] for f in row["failures"]] == ["near_duplicate"]


@pytest.mark.parametrize("args", [["/nonexistent/envs"], ["{good}", "--pool", "/nonexistent"]])
def test_validate_missing_path_is_a_usage_error(args: list[str]) -> None:
    args = [a.replace("{good}", str(CONTRACT / "good_guess.py")) for a in args]
    result = spade("validate", "--json", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "no such file or directory: /nonexistent" in result.stderr


def test_validate_empty_dir_is_a_usage_error(tmp_path: Path) -> None:
    result = spade("validate", tmp_path)
    assert result.returncode == 2 and "no environment files" in result.stderr


# --- play -------------------------------------------------------------------------------------


def solution_of(path: Path, seed: int) -> list[str]:
    """The environment's own solution at `seed`, computed in the sandbox."""

    async def run() -> Any:
        async with Sandbox() as sandbox:
            session = await sandbox.open(path.read_text())
            await session.reset(seed)
            replies = await session.solution()
            await session.close()
            return replies

    replies = asyncio.run(run())
    return [replies] if isinstance(replies, str) else replies


def test_play_replays_a_winning_seed_game(tmp_path: Path) -> None:
    replies = solution_of(SEED_GAME, seed=5)
    assert replies and all("\\boxed{" in r for r in replies)
    actions = tmp_path / "actions.txt"
    actions.write_text("\n".join(replies) + "\n")
    result = spade("play", SEED_GAME, "--seed", "5", "--actions", actions)
    assert result.returncode == 0, result.stderr
    assert "FractionBisectionEnv  seed 5" in result.stdout
    for reply in replies:
        assert f"> {reply}" in result.stdout
    assert f"episode terminated after {len(replies)} turns: return 1 (win)" in result.stdout


def test_play_json_actions_and_a_losing_replay(tmp_path: Path) -> None:
    replies = solution_of(CONTRACT / "good_guess.py", seed=2)
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps(replies))
    win = spade("play", CONTRACT / "good_guess.py", "--seed", "2", "--actions", actions)
    assert win.returncode == 0
    assert f"after {len(replies)} turns: return 1 (win)" in win.stdout
    lose = spade(
        "play", CONTRACT / "good_guess.py", "--seed", "2", "--actions", actions, "--max-turns", "2"
    )
    assert lose.returncode == 0  # playing is not judging: a lost episode is not an error
    assert "episode truncated after 2 turns: return 0 (no win)" in lose.stdout


def test_play_usage_errors(tmp_path: Path) -> None:
    assert spade("play", tmp_path / "missing.py").returncode == 2
    bad = tmp_path / "actions.json"
    bad.write_text('{"not": "a list"}')
    result = spade("play", CONTRACT / "good_guess.py", "--actions", bad)
    assert result.returncode == 2 and "expected a JSON list of strings" in result.stderr


def test_play_reports_an_environment_that_cannot_start() -> None:
    result = spade("play", CONTRACT / "bad_syntax.py")
    assert result.returncode == 1
    assert "cannot start the environment" in result.stdout


ECHO_ENV = '''"""Echo the reply; the board uses square brackets."""


class EchoEnv:
    def reset(self, seed=None):
        return "Board: [x] [o] [/] [bold]plain[/bold]", {}

    def step(self, action):
        return "You said " + action, 1.0, True, False, {}
'''


def test_play_prints_observations_verbatim(tmp_path: Path) -> None:
    env = tmp_path / "echo.py"
    env.write_text(ECHO_ENV)
    actions = tmp_path / "a.txt"
    actions.write_text("\\boxed{1}\n")
    result = spade("play", env, "--actions", actions)
    assert "Board: [x] [o] [/] [bold]plain[/bold]" in result.stdout


def test_play_survives_replies_with_brackets(tmp_path: Path) -> None:
    env = tmp_path / "echo.py"
    env.write_text(ECHO_ENV)
    actions = tmp_path / "a.txt"
    actions.write_text("[/] \\boxed{[/]}\n")
    result = spade("play", env, "--actions", actions)
    assert result.returncode == 0, result.stderr[-500:]
    assert "> [/] \\boxed{[/]}" in result.stdout


# --- doctor / help ----------------------------------------------------------------------------


def test_doctor_prints_the_layer_table() -> None:
    result = spade("doctor")
    assert result.returncode == 0, result.stderr
    assert "spade sandbox isolation layers" in result.stdout
    lines = result.stdout.splitlines()
    for layer in LAYERS:
        (line,) = [ln for ln in lines if f" {layer} " in ln]
        assert ("active" in line) or ("missing" in line), line
    assert "Landlock ABI" in result.stdout


def test_help_exits_zero() -> None:
    result = spade("--help")
    assert result.returncode == 0
    for command in ("validate", "play", "doctor"):
        assert command in result.stdout
    assert spade("validate", "--help").returncode == 0


def test_unknown_subcommand_is_a_usage_error() -> None:
    assert spade("frobnicate").returncode == 2
