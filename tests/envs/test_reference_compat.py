"""Environments in the reference release's format (SPADE.md section 8) run unchanged.

The fixtures in tests/programs/reference/ are written for these tests in the reference's pool
format: reference file names (the skill slug keeps its hyphen), a one-line docstring and no header,
`ToolUseBaseEnv` and the pre-filled names used without import. One test per difference listed in
issue 12 (docs/environments.md, "Compatibility with the reference").
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from spade.envs.checks import ValidatorConfig
from spade.envs.episode import run_episode
from spade.envs.pool import Pool
from spade.envs.pool_io import Candidate, import_candidates
from spade.envs.validate import validate, validate_many
from spade.sandbox import Sandbox
from spade.sandbox.runtime import build_namespace, find_env_class, instantiate
from spade.types import Program

REFERENCE = Path(__file__).resolve().parents[1] / "programs" / "reference"
WORKFLOW = REFERENCE / "game_00003_001_multi-step_workflows.py"
ROSTER = REFERENCE / "game_00001_004_data_retrieval.py"
DEDUCTION = REFERENCE / "game_00002_000_logical_deduction.py"
NEXT_TERM = REFERENCE / "game_00004_002_pattern_recognition.py"
CFG = ValidatorConfig(probe_seeds=2, solution_seeds=2)


def _env(path: Path, max_turns: int = 25, **kwargs: Any) -> Any:
    """The environment of a fixture, built by the runtime's loader (these fixtures are ours)."""
    source = path.read_text()
    namespace = build_namespace()
    exec(compile(source, str(path), "exec"), namespace)
    return instantiate(find_env_class(source, namespace), max_turns, kwargs)


def _call(tool: str, **args: Any) -> str:
    import json

    return f'<tool_call>{{"name": "{tool}", "arguments": {json.dumps(args)}}}</tool_call>'


@pytest.fixture(scope="module")
def verdicts() -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        programs = [Program.from_file(p) for p in sorted(REFERENCE.glob("*.py"))]
        async with Sandbox() as sandbox:
            found = await validate_many(programs, sandbox, CFG)
        return {Path(p.source).name: v for p, v in zip(programs, found)}

    return asyncio.run(run())


@pytest.mark.parametrize("path", sorted(REFERENCE.glob("*.py")), ids=lambda p: p.name)
def test_every_reference_format_fixture_is_admitted(path: Path, verdicts: dict[str, Any]) -> None:
    verdict = verdicts[path.name]
    assert verdict.admitted, verdict.failures


# --- prose solution() of tool-use files ---------------------------------------------------------


def test_prose_solution_is_a_description_not_a_reply(verdicts: dict[str, Any]) -> None:
    stats = verdicts[WORKFLOW.name].stats
    assert stats["kind"] == "tool"
    assert stats["solution"] == "not replayable (skipped)"
    env = _env(WORKFLOW, max_turns=2)
    env.reset(seed=0)
    assert env.solution().endswith("<answer>done</answer>")  # the reference's shape
    env.step("thinking")
    obs, reward, terminated, truncated, _ = env.step("still thinking")
    assert truncated and not terminated and reward == -0.1
    assert "Solution: First call check_stock" in obs  # shown at the turn limit


def test_a_pure_answer_string_solution_is_still_replayed(verdicts: dict[str, Any]) -> None:
    # ROSTER's solution() is `<answer>...</answer>` alone: one reply, replayed, and it wins
    assert verdicts[ROSTER.name].stats["solution"] == "wins"


# --- skill slugs with a hyphen --------------------------------------------------------------------


def test_hyphenated_skill_slug_is_read_from_the_file_name() -> None:
    assert Program.from_file(WORKFLOW).skill == "Multi-Step Workflows"
    assert Program.from_file(ROSTER).skill == "Data Retrieval"
    assert Program.from_code("x = 1\n", source="game_00000_001_multi_step_workflows.py").skill == (
        "Multi-Step Workflows"
    )


def test_pool_import_accepts_a_hyphenated_reference_file(tmp_path: Path) -> None:
    program = Program.from_file(WORKFLOW)

    async def run() -> Any:
        with Pool(tmp_path / "pool.sqlite") as pool:
            async with Sandbox() as sandbox:
                (result,) = await import_candidates(
                    [Candidate(program, str(WORKFLOW))], pool, sandbox, CFG
                )
            return result, [p.skill for p in pool.admitted()]

    result, skills = asyncio.run(run())
    assert result.verdict.admitted, result.verdict.failures
    assert skills == ["Multi-Step Workflows"]


# --- _check_answer overrides, _obs_suffix, **kwargs, unregistered tools, answer first -----------


def test_check_answer_override_decides() -> None:
    env = _env(ROSTER)
    env.reset(seed=3)
    names = env._expected_answer
    reversed_answer = ", ".join(reversed(names)).upper()  # only the override accepts this
    assert env.step(f"<answer>{reversed_answer}</answer>")[:3] == ("Correct!", 1.0, True)
    env.reset(seed=3)
    assert env.step("<answer>nobody</answer>")[1:3] == (0.0, False)


def test_obs_suffix_exists_and_adds_nothing() -> None:
    env = _env(WORKFLOW)
    obs, _ = env.reset(seed=1)
    assert obs == env._user_messages[0]
    assert env._obs_suffix() == ""


def test_base_init_takes_keyword_arguments() -> None:
    env = _env(ROSTER, region="apac")
    assert env.region == "apac" and env.max_turns == 8
    assert env.reset(seed=0)[0].startswith("Region apac:")


def test_tool_methods_run_without_a_tools_entry() -> None:
    env = _env(ROSTER)
    env.reset(seed=3)
    assert "is_on_call" not in env._tools
    person = env._expected_answer[0]
    assert env.execute_tool("is_on_call", {"name": person}) == {"output": "yes", "returncode": 0}
    obs, reward, *_ = env.step(_call("is_on_call", name=person))
    assert obs == "[is_on_call] yes" and reward == 0.0
    assert env.execute_tool("no_such_tool", {})["returncode"] == 1
    assert "Unknown tool 'no_such_tool'" in env.step(_call("no_such_tool"))[0]


def test_an_answer_is_handled_before_tool_calls_in_the_same_reply() -> None:
    env = _env(WORKFLOW)
    env.reset(seed=2)
    reply = _call("check_stock", shelf=env.target) + "<answer>done</answer>"
    obs, reward, terminated, _, _ = env.step(reply)
    assert (reward, terminated) == (0.0, False)
    assert "checked" not in env._state  # the tool call did not run
    assert "step 1/3" in obs  # the feedback names the pending instruction


# --- pre-filled names, top-level statements -----------------------------------------------------


def test_prefilled_names_match_the_reference() -> None:
    namespace = build_namespace()
    for name in (
        "heappush heappop chain FrozenSet Iterable Sequence Mapping numpy np "
        "deque defaultdict Counter combinations permutations product reduce lru_cache deepcopy "
        "math random re json itertools collections functools string copy heapq operator "
        "statistics Any Dict List Optional Tuple Set Union Callable ToolUseBaseEnv"
    ).split():
        assert name in namespace, name
    assert namespace["numpy"] is namespace["np"]


def test_top_level_statements_run_and_the_file_is_admitted(
    verdicts: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    verdict = verdicts[DEDUCTION.name]
    assert verdict.admitted, verdict.failures  # its top-level PRIMES and _merge are used in reset
    _env(DEDUCTION).reset(seed=0)
    assert "loading a deduction game" in capsys.readouterr().out


def test_nondeterministic_top_level_code_still_fails_determinism() -> None:
    code = (
        '"""Top-level state drawn from the hash order."""\n\n'
        'ORDER = list({"alpha", "beta", "gamma", "delta", "eps"})\n\n\n'
        "class HashOrderEnv:\n"
        "    def reset(self, seed=None):\n"
        "        self.target = ORDER[0]\n"
        '        return "Which word? One of " + ", ".join(sorted(ORDER)), {}\n\n'
        "    def step(self, action):\n"
        "        won = self.target in action\n"
        '        return ("yes" if won else "no: " + self.target), float(won), True, False, {}\n\n'
        "    def solution(self):\n"
        '        return "\\\\boxed{" + self.target + "}"\n'
    )

    async def run() -> Any:
        async with Sandbox() as sandbox:
            return await validate(Program.from_code(code), sandbox, CFG)

    verdict = asyncio.run(run())
    assert "determinism" in {f.check for f in verdict.failures}, verdict.failures


# --- the game's own max_turns -------------------------------------------------------------------


def _turns(path: Path, budget: int) -> tuple[int, int, bool]:
    async def run() -> tuple[int, int, bool]:
        async with Sandbox() as sandbox:
            session = await sandbox.open(path.read_text(), max_turns=budget)
            assert session.info is not None
            episode = await run_episode(
                session, lambda t, o: "\\boxed{-5}", seed=0, max_turns=budget
            )
            await session.close()
            return session.info.max_turns, len(episode.turns), episode.truncated

    return asyncio.run(run())


def test_the_games_own_max_turns_caps_the_episode() -> None:
    assert _turns(NEXT_TERM, 25) == (4, 4, True)  # its own cap, not the budget of 25
    assert _turns(NEXT_TERM, 2) == (2, 2, True)  # capped at the budget
    assert _turns(DEDUCTION, 25)[:2] == (3, 3)  # a constructor default counts too


def test_a_constructor_that_needs_max_turns_gets_the_budget() -> None:
    class NeedsTurnsEnv:
        def __init__(self, max_turns: int) -> None:
            self.max_turns = max_turns

    assert instantiate(NeedsTurnsEnv, 7).max_turns == 7
