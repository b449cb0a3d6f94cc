"""BFCL as sandboxed tool environments: ground-truth calls win under BFCL's own checkers, and
missing, wrong, extra or injected calls lose."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("bfcl_eval")

from suitekit import SuiteSandbox, module_sandbox

from spade.cli.main import main
from spade.envs.episode import replay, run_episode
from spade.evals.suites import suite_programs, suite_sandbox_config
from spade.evals.suites.bfcl import EXCLUDED, _schema
from spade.sandbox import Sandbox

CONFIG = suite_sandbox_config("bfcl")

box = module_sandbox(CONFIG)  # one sandbox, the suite's package preloaded, per module


def _call(name: str, **args: object) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


@pytest.mark.parametrize(
    "categories",
    ["simple_python,multiple,parallel,irrelevance", "live_simple,live_multiple,parallel_multiple"],
)
def test_ground_truth_calls_win(categories: str, box: SuiteSandbox) -> None:
    programs = suite_programs(f"bfcl:{categories}", limit=8)
    result = box.solutions(programs)
    assert result.errors == 0
    assert result.overall.wins == result.overall.episodes == 8 * len(categories.split(","))


def test_single_turn_replies_that_are_not_the_call_lose(box: SuiteSandbox) -> None:
    # simple_python_0: calculate_triangle_area(base=10, height=5), unit optional
    (program,) = suite_programs("bfcl:simple_python", limit=1)
    good = _call("calculate_triangle_area", base=10, height=5)
    episodes = [
        [""],
        ["The area is 25."],
        [_call("calculate_triangle_area", base=10, height=6)],
        [_call("calculate_triangle_area", base=10)],  # a required parameter missing
        [_call("triangle_area", base=10, height=5)],
        [good + "\n" + good],  # one call expected
        ['<tool_call>{"name": "calculate_triangle_area", "arguments": {"base": 10,</tool_call>'],
        [good],
        [_call("calculate_triangle_area", base=10, height=5, unit="units")],
    ]
    assert box.returns(program, episodes, max_turns=1) == [0, 0, 0, 0, 0, 0, 0, 1, 1]
    (irrelevant,) = suite_programs("bfcl:irrelevance", limit=1)
    tool = json.loads(box.solution_of(program).split("<tool_call>")[1].split("</")[0])
    replies = [["No tool fits."], [_call(tool["name"], **tool["arguments"])], [""]]
    assert box.returns(irrelevant, replies, max_turns=1) == [1, 0, 1]


def test_multi_turn_ground_truth_wins_and_other_play_loses(box: SuiteSandbox) -> None:
    programs = suite_programs("bfcl:multi_turn_base,multi_turn_miss_param", limit=5)
    result = box.solutions(programs, max_turns=100)
    assert (result.overall.wins, result.overall.episodes, result.errors) == (10, 10, 0)

    program = programs[0]  # multi_turn_base_0: 4 user turns in a file system
    truth = box.solution_of(program)
    assert len(truth) == 8 and truth[1::2] == ["Done."] * 4
    injected = _call("cd", folder="document'); __import__('os').system('true'); ('")
    episodes = [
        ["Done."] * 4,  # no calls at all
        truth[:6] + ["Done."] * 2,  # the last turn's calls left out
        [truth[0].replace('"temp"', '"tmp"'), *truth[1:]],  # a wrong directory name
        [injected + "\n" + truth[0], *truth[1:]],  # arguments are literals, never code
        [_call("rm_rf_everything", path="/") + "\n" + truth[0], *truth[1:]],  # unknown tool
        truth,
    ]
    got = box.returns(program, episodes, max_turns=100)
    assert got[:3] == [0.0, 0.0, 0.0] and got[5] == 1.0
    assert got[3] == 1.0  # the injected folder name is just a folder that does not exist
    assert got[4] == 1.0  # an unknown tool is reported, not executed, and changes nothing


def test_a_reused_session_starts_each_episode_from_the_initial_state() -> None:
    (program,) = suite_programs("bfcl:multi_turn_base", limit=1)

    async def run() -> list[float]:
        async with Sandbox(CONFIG) as sandbox:
            async with await sandbox.open(program.code, max_turns=100) as session:
                await session.reset(0)
                truth = await session.solution()
                out = []
                for _ in range(2):  # the backends' instances are keyed per episode
                    episode = await run_episode(session, replay(truth), seed=0, max_turns=100)
                    out.append(episode.return_)
                return out

    assert asyncio.run(run()) == [1.0, 1.0]


def test_multi_turn_episodes_are_capped_by_the_environment(box: SuiteSandbox) -> None:
    (program,) = suite_programs("bfcl:multi_turn_base", limit=1)
    ls = _call("ls")
    # 4 user turns x 5 = 20 replies: a model that only ever calls tools is cut off there
    assert box.returns(program, [[ls] * 40], max_turns=100) == [0.0]


def test_schemas_and_refusals() -> None:
    bfcl = {
        "type": "dict",
        "properties": {
            "type": {"type": "string", "description": "a parameter named 'type'"},
            "ratio": {"type": "float"},
            "pair": {"type": "tuple", "items": {"type": "integer"}},
            "cfg": {"type": "dict", "properties": {"x": {"type": "any"}}},
        },
        "required": ["type"],
    }
    assert _schema(bfcl) == {
        "type": "object",
        "properties": {
            "type": {"type": "string", "description": "a parameter named 'type'"},
            "ratio": {"type": "number"},
            "pair": {"type": "array", "items": {"type": "integer"}},
            "cfg": {"type": "object", "properties": {"x": {}}},
        },
        "required": ["type"],
    }
    with pytest.raises(ValueError, match="miss_func is excluded: its functions are revealed"):
        suite_programs("bfcl:multi_turn_miss_func")
    with pytest.raises(ValueError, match="no category 'simple'"):
        suite_programs("bfcl:simple")
    with pytest.raises(ValueError, match="no levels"):
        suite_programs("bfcl", level=1)
    assert "simple_java" in EXCLUDED


def test_spade_eval_bfcl_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    # multi-turn items need more than eval's plain 8 turns: the suite's budget is the default
    # (multi_turn_base_2 takes 10 replies: 5 user turns, each calls then "Done.")
    argv = ["eval", "--suite", "bfcl:parallel,multi_turn_base", "--limit", "3", "--seeds", "1"]
    assert main([*argv, "--policy", "solution", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["overall"]["wins"] == result["overall"]["episodes"] == 6
    assert main([*argv, "--policy", "solution", "--json", "--max-turns", "8"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["by_skill"]["bfcl:multi_turn_base"]["wins"] == 2
