"""The validator's contract suite: every file in tests/programs/contract/ is validated in the
sandbox.

`good_*.py` must be admitted with no failure. Each `bad_*.py` names in its docstring the exact set
of checks that must fail (`expect: determinism, solvable`), and, for duplicate checks, the pool to
compare against (`pool: good_guess.py`, relative to the folder). The expectations are read from the
raw text with a regex, so a file that does not parse can still state its own.

All programs are validated once, four at a time, in one sandbox (module fixture); each test
then looks up its verdict.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from spade.envs.checks import ValidatorConfig
from spade.envs.validate import validate, validate_many
from spade.sandbox import Sandbox
from spade.types import Program, Verdict

CONTRACT = Path(__file__).resolve().parents[1] / "programs" / "contract"
GOOD = sorted(CONTRACT.glob("good_*.py"))
BAD = sorted(CONTRACT.glob("bad_*.py"))
OVERSIZED = "oversized (good_guess.py padded past max_code_bytes)"


def expected_checks(path: Path) -> set[str]:
    match = re.search(r"^expect:\s*(.+)$", path.read_text(), re.MULTILINE)
    assert match, f"{path.name} does not say which check it expects (`expect: ...`)"
    return {name.strip() for name in match.group(1).split(",")}


def pool_of(path: Path) -> list[Program]:
    match = re.search(r"^pool:\s*(.+)$", path.read_text(), re.MULTILINE)
    return [Program.from_file(CONTRACT / match.group(1).strip())] if match else []


def checks(verdict: Verdict) -> set[str]:
    return {f.check for f in verdict.failures}


# A fixed version of a rejected program, validated after it in one batch (validate_many).
GOOD_GUESS = (CONTRACT / "good_guess.py").read_text()
BROKEN_GUESS = GOOD_GUESS.replace('"Correct!", 1.0, True', '"Correct!", 0.0, True')
# docs/environments.md: "Other standard-library modules may be imported normally."
STDLIB_IMPORT = GOOD_GUESS.replace(
    "\n\n\nclass GuessEnv", "\nimport colorsys\nimport queue\n\n\nclass GuessEnv"
)


@pytest.fixture(scope="module")
def verdicts() -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        cfg = ValidatorConfig()
        programs = {p.name: (Program.from_file(p), pool_of(p)) for p in GOOD + BAD}
        padding = "# padding\n" * (cfg.max_code_bytes // 10 + 1)
        programs[OVERSIZED] = (Program.from_code(GOOD_GUESS + padding), [])
        programs["stdlib import"] = (Program.from_code(STDLIB_IMPORT), [])
        # four at a time, like `spade validate`: each validation already runs ~8 workers at once
        # and two fresh interpreters, and the deadlines are wall-clock on a busy 2-CPU machine
        gate = asyncio.Semaphore(4)

        async def one(name: str) -> Verdict:
            async with gate:
                return await validate(programs[name][0], sandbox, cfg, pool=programs[name][1])

        async with Sandbox() as sandbox:
            names = list(programs)
            results = await asyncio.gather(*(one(n) for n in names))
            out: dict[str, Any] = dict(zip(names, results))
            out["batch"] = await validate_many(
                [Program.from_code(BROKEN_GUESS), Program.from_code(GOOD_GUESS)], sandbox, cfg
            )
        return out

    return asyncio.run(run())


def test_fixture_folder_is_complete() -> None:
    # one fixture per check the suite is meant to cover
    covered = set().union(*(expected_checks(p) for p in BAD))
    assert covered >= {
        "parse",
        "env_class",
        "contract",
        "exception",
        "not_trivial",
        "solvable",
        "determinism",
        "termination",
        "duplicate",
        "near_duplicate",
        "answer_leak",
        "seed_used",
    }
    assert len(GOOD) >= 2


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_environment_is_admitted(path: Path, verdicts: dict[str, Any]) -> None:
    verdict = verdicts[path.name]
    assert verdict.failures == ()
    assert verdict.admitted
    assert verdict.env_id == Program.from_file(path).env_id
    assert verdict.stats["seconds"] > 0


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_environment_fails_its_check(path: Path, verdicts: dict[str, Any]) -> None:
    verdict = verdicts[path.name]
    assert not verdict.admitted
    assert expected_checks(path) <= checks(verdict), verdict.failures
    for failure in verdict.failures:
        assert failure.reason  # every failure says why


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_environment_fails_exactly_its_checks(path: Path, verdicts: dict[str, Any]) -> None:
    assert checks(verdicts[path.name]) == expected_checks(path), verdicts[path.name].failures


def test_oversized_code(verdicts: dict[str, Any]) -> None:
    verdict = verdicts[OVERSIZED]
    assert [f.check for f in verdict.failures] == ["size"]
    assert "exceeds the 64000-byte limit" in verdict.failures[0].reason


def test_static_failures_stop_before_running_anything(verdicts: dict[str, Any]) -> None:
    for name in (
        "bad_syntax.py",
        "bad_no_env_class.py",
        "bad_two_env_classes.py",
    ):
        verdict = verdicts[name]
        assert len(verdict.failures) == 1 and dict(verdict.stats) == {}, name


def test_static_failure_reasons(verdicts: dict[str, Any]) -> None:
    reason = {
        name: verdicts[name].failures[0].reason
        for name in (
            "bad_syntax.py",
            "bad_no_env_class.py",
            "bad_two_env_classes.py",
        )
    }
    assert reason["bad_syntax.py"].startswith("SyntaxError")
    assert "(line 8)" in reason["bad_syntax.py"]
    assert reason["bad_no_env_class.py"] == "no top-level class whose name ends in 'Env'"
    assert reason["bad_two_env_classes.py"].startswith(
        "2 environment classes (FirstEnv, SecondEnv)"
    )


def test_dynamic_failure_reasons(verdicts: dict[str, Any]) -> None:
    def reasons(name: str, check: str) -> list[str]:
        return [f.reason for f in verdicts[name].failures if f.check == check]

    assert any(
        "reward 50.0 outside [-10, 10]" in r for r in reasons("bad_reward_range.py", "contract")
    )
    assert any(
        "terminated must be a bool, got int" in r
        for r in reasons("bad_terminated_not_bool.py", "contract")
    )
    assert any("got a sequence of 4" in r for r in reasons("bad_step_arity4.py", "contract"))
    assert any(
        "probe 'constant \\\\boxed{test}'" in r and "ValueError" in r
        for r in reasons("bad_step_exception.py", "exception")
    )
    assert any(
        "probe 'empty' wins 100% of 8 episodes" in r
        for r in reasons("bad_always_wins.py", "not_trivial")
    )
    assert reasons("bad_solution_loses.py", "solvable") == [
        "solution() does not win at default, seed 0 (return 0 after 1 turns)"
    ]
    assert "PYTHONHASHSEED=1 and 2" in reasons("bad_hash_order.py", "determinism")[0]
    assert reasons("bad_never_terminates.py", "termination")[0].startswith("none of ")
    assert "pool/exact_copy.py" in reasons("bad_exact_duplicate.py", "duplicate")[0]
    assert "good_guess.py" in reasons("bad_near_duplicate.py", "near_duplicate")[0]


def test_hash_order_bug_is_invisible_to_forked_workers(verdicts: dict[str, Any]) -> None:
    # Forks share the zygote's hash seed: the solution replays fine there (SANDBOX.md lesson 2);
    # only the fresh interpreters of the determinism check see the difference.
    assert verdicts["bad_hash_order.py"].stats["solution"] == "wins"


def test_duplicates_do_not_hide_other_results(verdicts: dict[str, Any]) -> None:
    for name in ("bad_exact_duplicate.py", "bad_near_duplicate.py"):
        assert verdicts[name].stats["solution"] == "wins", name


def test_prose_solution_skips_the_solvable_check(verdicts: dict[str, Any]) -> None:
    verdict = verdicts["good_tool_prose.py"]
    assert verdict.admitted
    assert verdict.stats["kind"] == "tool"
    assert verdict.stats["solution"] == "not replayable (skipped)"
    assert "solution_lengths" not in verdict.stats


def test_replayable_tool_solution_is_checked(verdicts: dict[str, Any]) -> None:
    verdict = verdicts["good_tool_multiturn.py"]
    assert verdict.stats["kind"] == "tool" and verdict.stats["solution"] == "wins"
    assert verdict.stats["solution_lengths"] == {"default": [4, 4, 4, 4]}


def test_probe_win_rates_are_reported(verdicts: dict[str, Any]) -> None:
    rates = verdicts["good_guess.py"].stats["probe_win_rates"]
    assert set(rates) == {
        "empty",
        "constant \\boxed{}",
        "constant \\boxed{1}",
        "constant \\boxed{test}",
        "constant \\boxed{42}",
        "constant \\boxed{0}",
        "constant \\boxed{A}",
        "random",
        "spray",
    }
    assert all(rate <= 0.25 for rate in rates.values())
    tool_rates = verdicts["good_tool_prose.py"].stats["probe_win_rates"]
    assert "constant <answer>done</answer>" in tool_rates


def test_a_question_that_names_its_options_is_not_a_leak(verdicts: dict[str, Any]) -> None:
    # a fixed position wins about half of a shuffled two-option question: reported, admitted
    for name in ("good_which_larger.py", "good_even_or_odd.py"):
        rates = verdicts[name].stats["copy_win_rates"]
        assert 0.2 <= max(rates.values()) <= 0.75, (name, rates)
    assert max(verdicts["good_multiple_choice.py"].stats["copy_win_rates"].values()) <= 0.5


def test_a_leak_names_the_copy_rule_that_found_it(verdicts: dict[str, Any]) -> None:
    reasons = {
        name: [f.reason for f in verdicts[name].failures if f.check == "answer_leak"]
        for name in (
            "bad_answer_in_question.py",
            "bad_sequence_hint.py",
            "bad_feedback_names_secret.py",
        )
    }
    assert "'copy number -1'" in reasons["bad_answer_in_question.py"][0]  # the last number
    assert "'copy number 5'" in reasons["bad_sequence_hint.py"][0]  # after four shown terms
    # the secret is named only in the feedback: the first number of the second observation
    assert "'copy number 1'" in reasons["bad_feedback_names_secret.py"][0]
    assert "of 64 episodes" in reasons["bad_answer_in_question.py"][0]  # confirmed on more seeds


def test_batch_duplicates_only_count_admitted_programs(verdicts: dict[str, Any]) -> None:
    broken, fixed = verdicts["batch"]
    assert checks(broken) == {"solvable"}
    assert fixed.admitted, fixed.failures


def test_environment_may_import_other_stdlib_modules(verdicts: dict[str, Any]) -> None:
    assert "import colorsys" in STDLIB_IMPORT
    assert verdicts["stdlib import"].admitted, verdicts["stdlib import"].failures


def test_validate_never_raises_on_unencodable_code() -> None:
    async def run() -> Verdict:
        # static checks fail first: the sandbox is never started
        return await validate(Program.from_code("x = '\ud800'\n"), None)  # type: ignore[arg-type]

    verdict = asyncio.run(run())
    assert not verdict.admitted and checks(verdict) == {"parse"}


def test_every_check_a_verdict_names_is_a_known_stable_name(verdicts: dict[str, Any]) -> None:
    from spade.envs.checks import CHECKS

    named = {
        f.check
        for v in verdicts.values()
        for verdict in (v if isinstance(v, list) else [v])
        for f in verdict.failures
    }
    named |= {
        w["check"]
        for v in verdicts.values()
        if isinstance(v, Verdict)
        for w in v.stats.get("warnings", ())
    }
    assert named <= set(CHECKS), named - set(CHECKS)
    assert {"answer_leak", "seed_used", "not_trivial", "solution_replay"} <= named
