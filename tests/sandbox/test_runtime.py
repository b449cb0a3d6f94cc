"""The environment runtime (spade/sandbox/runtime.py): parsing helpers, loader, ToolUseBaseEnv.

These are trusted-code unit tests: the functions and the base class run in this process, with small
environments defined here. The contract they pin is docs/environments.md.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import math
import random
import typing

import pytest

from spade.sandbox import runtime
from spade.sandbox.runtime import (
    ToolUseBaseEnv,
    answers_match,
    build_namespace,
    env_class_names,
    extract_boxed,
    find_env_class,
    game_action,
    instantiate,
    parse_answer,
    parse_tool_calls,
)

# --- extract_boxed / game_action ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so \boxed{7}", "7"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),  # nested braces stay balanced
        (r"\boxed{a{b{c}}d} tail}", "a{b{c}}d"),
        (r"first \boxed{up} then \boxed{down}", "up"),  # the first of many
        (r"\boxed{}", ""),
        ("no box here", None),
        (r"\boxed{never closed", None),
        (r"\boxed{a{b}", None),  # unbalanced inside
    ],
)
def test_extract_boxed(text: str, expected: str | None) -> None:
    assert extract_boxed(text) == expected


def test_game_action_rewraps_first_box_and_passes_raw_text() -> None:
    assert game_action(r"I think it is \boxed{ 7 } or \boxed{8}") == r"\boxed{ 7 }"
    assert game_action(r"\boxed{\frac{1}{2}}") == r"\boxed{\frac{1}{2}}"
    assert game_action("move left") == "move left"
    assert game_action("") == ""


# --- parse_tool_calls / parse_answer -----------------------------------------------------------


def test_parse_tool_calls_json_form() -> None:
    text = 'Let me look.<tool_call>{"name": "get_price", "arguments": {"item": "gear"}}</tool_call>'
    assert parse_tool_calls(text) == [("get_price", {"item": "gear"})]


def test_parse_tool_calls_several_in_order_and_missing_arguments() -> None:
    text = (
        '<tool_call>{"name": "a"}</tool_call> and '
        '<tool_call>\n  {"name": "b", "arguments": {"x": [1, 2]}}\n</tool_call>'
    )
    assert parse_tool_calls(text) == [("a", {}), ("b", {"x": [1, 2]})]


def test_parse_tool_calls_openai_string_arguments() -> None:
    args = json.dumps({"item": "lens", "qty": 3})
    text = "<tool_call>" + json.dumps({"name": "buy", "arguments": args}) + "</tool_call>"
    assert parse_tool_calls(text) == [("buy", {"item": "lens", "qty": 3})]
    empty = "<tool_call>" + json.dumps({"name": "ping", "arguments": "  "}) + "</tool_call>"
    assert parse_tool_calls(empty) == [("ping", {})]


def test_parse_tool_calls_qwen_xml_form() -> None:
    wrapped = (
        "<tool_call><function=move><parameter=box>red</parameter>"
        "<parameter=count>2</parameter></function></tool_call>"
    )
    # parameter values are JSON when they parse as JSON, else the raw (stripped) text
    assert parse_tool_calls(wrapped) == [("move", {"box": "red", "count": 2})]
    bare = "<function=lookup>\n<parameter=ids>\n[1, 2]\n</parameter>\n</function>"
    assert parse_tool_calls(bare) == [("lookup", {"ids": [1, 2]})]


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>{not json}</tool_call>",
        '<tool_call>["get_price", {}]</tool_call>',  # not an object
        '<tool_call>{"arguments": {}}</tool_call>',  # no name
        '<tool_call>{"name": 3, "arguments": {}}</tool_call>',
        '<tool_call>{"name": "f", "arguments": "{broken"}</tool_call>',  # bad string arguments
        '<tool_call>{"name": "f", "arguments": [1]}</tool_call>',  # arguments not an object
        '<tool_call>{"name": "ok"}</tool_call><tool_call>oops</tool_call>',  # one bad: all bad
    ],
)
def test_parse_tool_calls_unparsable_is_none(text: str) -> None:
    assert parse_tool_calls(text) is None


def test_parse_tool_calls_no_call_is_empty_list() -> None:
    assert parse_tool_calls("I will answer directly. <answer>4</answer>") == []


def test_parse_answer() -> None:
    assert parse_answer("thinking... <answer> 42 </answer>") == "42"
    assert parse_answer("<ANSWER>Paris</ANSWER>") == "Paris"  # case-insensitive tags
    assert parse_answer("<answer>a</answer><answer>b</answer>") == "a"
    assert parse_answer("<answer>multi\nline</answer>") == "multi\nline"
    assert parse_answer("no answer") is None
    assert parse_answer("<answer>unclosed") is None


# --- answers_match ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected", "match"),
    [
        ("Paris", "paris", True),  # case-insensitive exact match
        ("  Paris ", "Paris", True),
        ("Pariss", "Paris", False),
        ("42", 42, True),  # the expected answer may be a number
        ("42.0", "42", True),  # numeric comparison
        ("$1,234.50", 1234.5, True),  # `$` and `,` stripped
        ("1234.5", "$1,234.50", True),
        ("3.145", math.pi, True),  # within 0.01
        ("3.1", math.pi, False),
        ("100.004", 100, True),
        ("100.02", 100, False),
        ("-5", 5, False),
        ("forty-two", 42, False),
        ("true", True, True),  # compared as str(True) == "True"
        ("anything", None, False),  # no expected answer: nothing matches
        ("", None, False),
    ],
)
def test_answers_match(given: str, expected: object, match: bool) -> None:
    assert answers_match(given, expected) is match


def test_answers_match_tolerance_is_consistent_at_the_boundary() -> None:
    assert answers_match("10.01", 10) and answers_match("-0.01", 0)
    assert answers_match("1.01", 1)
    assert answers_match("$2.01", "2")


# --- ToolUseBaseEnv ----------------------------------------------------------------------------


class PriceEnv(ToolUseBaseEnv):
    """Reference-style single-answer tool env: reset() does not touch the base bookkeeping."""

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, typing.Any]]:
        rng = random.Random(seed)
        self._state = {"prices": {"bolt": rng.randint(10, 99), "gear": rng.randint(10, 99)}}
        self._expected_answer = self._state["prices"]["gear"] * 3
        self._tools = {
            "get_price": {
                "description": "Unit price of an item.",
                "parameters": {
                    "type": "object",
                    "properties": {"item": {"type": "string"}},
                    "required": ["item"],
                },
            },
            "fail": {"description": "Always raises."},
        }
        return "What do 3 gears cost?", {}

    def tool_get_price(self, item: str) -> str:
        return str(self._state["prices"][item])

    def tool_fail(self) -> str:
        raise RuntimeError("backend down")

    def tool_hidden(self) -> str:  # a method that is not a declared tool
        return "secret"

    def solution(self) -> str:
        return f"get_price(gear), then answer {self._expected_answer}"


def call(name: str, **args: typing.Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


def test_tool_env_init_bookkeeping_and_get_tools() -> None:
    env = PriceEnv()
    assert env.max_turns == 10  # the base default
    assert env.turn_count == 0 and env._call_history == [] and env._current_msg == 0
    assert env._user_messages == [] and env._message_criteria == []
    assert env._expected_answer is not None  # __init__ called reset()
    tools = {t["function"]["name"]: t for t in env.get_tools()}
    assert set(tools) == {"get_price", "fail"}
    assert tools["get_price"] == {
        "type": "function",
        "function": {
            "name": "get_price",
            "description": "Unit price of an item.",
            "parameters": {
                "type": "object",
                "properties": {"item": {"type": "string"}},
                "required": ["item"],
            },
        },
    }
    # a tool without a schema gets an empty object schema
    assert tools["fail"]["function"]["parameters"] == {"type": "object", "properties": {}}


def test_correct_answer_is_terminal_with_reward_one() -> None:
    env = PriceEnv()
    env.reset(seed=1)
    want = env._expected_answer
    assert env.step(f"<answer>{want}</answer>") == ("Correct!", 1.0, True, False, {})
    env.reset(seed=1)
    env.turn_count = 0
    obs, reward, terminated, _, _ = env.step(f"<answer>${want:,}.00</answer>")
    assert (obs, reward, terminated) == ("Correct!", 1.0, True)


def test_wrong_answer_is_zero_and_not_terminal() -> None:
    env = PriceEnv()
    env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step("<answer>-1</answer>")
    assert (reward, terminated, truncated, info) == (0.0, False, False, {})
    assert "Incorrect" in obs
    assert env.turn_count == 1


@pytest.mark.parametrize("reply", ["I give up", "<tool_call>{broken</tool_call>", ""])
def test_neither_answer_nor_parsable_call_costs_a_tenth(reply: str) -> None:
    env = PriceEnv()
    obs, reward, terminated, truncated, _ = env.step(reply)
    assert (reward, terminated, truncated) == (-0.1, False, False)
    assert "Available tools: fail, get_price" in obs


def test_tool_call_output_is_the_observation() -> None:
    env = PriceEnv()
    env.reset(seed=2)
    price = env._state["prices"]["gear"]
    obs, reward, terminated, truncated, _ = env.step(call("get_price", item="gear"))
    assert obs == f"[get_price] {price}"
    assert (reward, terminated, truncated) == (0.0, False, False)
    obs, *_ = env.step(call("get_price", item="bolt") + call("get_price", item="gear"))
    assert obs.splitlines() == [
        f"[get_price] {env._state['prices']['bolt']}",
        f"[get_price] {price}",
    ]
    assert env.turn_count == 2  # every step is one turn, however many calls it holds
    assert [c["arguments"] for c in env._call_history] == [
        {"item": "gear"},
        {"item": "bolt"},
        {"item": "gear"},
    ]


def test_unknown_tool_is_zero_reward_with_the_tool_list() -> None:
    env = PriceEnv()
    obs, reward, terminated, truncated, _ = env.step(call("teleport"))
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert "Unknown tool 'teleport'" in obs and "Available tools: fail, get_price" in obs
    assert env._call_history == []


def test_a_tool_method_without_a_schema_still_runs() -> None:
    env = PriceEnv()  # like the reference: any tool_<name> method is a tool
    assert env.step(call("hidden"))[:2] == ("[hidden] secret", 0.0)
    assert env._call_history == [{"name": "hidden", "arguments": {}}]


def test_tool_error_is_reported_in_the_observation() -> None:
    env = PriceEnv()
    obs, reward, *_ = env.step(call("get_price", item="unobtainium"))
    assert obs.startswith("[get_price] Error: KeyError") and reward == 0.0


def test_answer_and_tool_calls_in_one_reply() -> None:
    env = PriceEnv()
    env.reset(seed=3)
    obs, reward, terminated, *_ = env.step(call("get_price", item="gear") + "<answer>0</answer>")
    # the answer is handled first and the tool calls do not run (the reference's order)
    assert obs == "Incorrect answer." and (reward, terminated) == (0.0, False)
    assert env._call_history == []


def test_execute_tool_returncodes_and_no_turn() -> None:
    env = PriceEnv()
    env.reset(seed=4)
    ok = env.execute_tool("get_price", {"item": "bolt"})
    assert ok == {"output": str(env._state["prices"]["bolt"]), "returncode": 0}
    err = env.execute_tool("fail", {})
    assert err == {"output": "Error: RuntimeError: backend down", "returncode": 1}
    bad_args = env.execute_tool("get_price", {"name": "bolt"})
    assert bad_args["returncode"] == 1 and bad_args["output"].startswith("Error: TypeError")
    unknown = env.execute_tool("teleport", {})
    assert unknown["returncode"] == 1 and "Unknown tool 'teleport'" in unknown["output"]
    assert env.turn_count == 0  # tool execution is not a turn


def test_truncation_at_max_turns_reveals_the_solution() -> None:
    env = PriceEnv(max_turns=3)
    env.reset(seed=5)
    assert env.step("<answer>1</answer>")[2:4] == (False, False)
    assert env.step("hmm")[2:4] == (False, False)
    obs, reward, terminated, truncated, _ = env.step("<answer>2</answer>")
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert obs.startswith("Incorrect answer.")
    solution = f"get_price(gear), then answer {env._expected_answer}"
    assert f"Turn limit reached. Solution: {solution}" in obs


def test_truncation_keeps_the_step_reward() -> None:
    env = PriceEnv(max_turns=1)
    obs, reward, terminated, truncated, _ = env.step("no idea")
    assert (reward, terminated, truncated) == (-0.1, False, True) and "Solution:" in obs


def test_correct_answer_on_the_last_turn_wins() -> None:
    env = PriceEnv(max_turns=2)
    env.reset(seed=6)
    env.step("<answer>0</answer>")
    assert env.step(f"<answer>{env._expected_answer}</answer>")[1:4] == (1.0, True, False)


def test_reset_starts_a_fresh_turn_budget() -> None:
    env = PriceEnv(max_turns=3)
    for _ in range(3):
        env.step("<answer>0</answer>")
    env.reset(seed=1)
    _, _, terminated, truncated, _ = env.step("<answer>0</answer>")
    assert (terminated, truncated) == (False, False)


# --- multi-turn tool tasks ---------------------------------------------------------------------


class ShelvesEnv(ToolUseBaseEnv):
    """Reference-style multi-turn env: three instructions revealed one at a time."""

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, typing.Any]]:
        self._state = {"shelf": {"red": "A", "blue": "A", "green": "A"}}
        self._user_messages = ["Move red to B.", "Move blue to C.", "Move green to B."]
        self._message_criteria = [
            lambda s: s["shelf"]["red"] == "B",
            lambda s: s["shelf"]["blue"] == "C",
            lambda s: s["shelf"]["green"] == "B",
        ]
        self._expected_answer = "done"
        self._tools = {
            "move": {
                "description": "Move a box.",
                "parameters": {
                    "type": "object",
                    "properties": {"box": {"type": "string"}, "shelf": {"type": "string"}},
                },
            }
        }
        return self._user_messages[0], {}

    def tool_move(self, box: str, shelf: str) -> str:
        self._state["shelf"][box] = shelf
        return f"{box} on {shelf}." + self._advance_if_done()


def test_advance_if_done_reveals_instructions_in_order() -> None:
    env = ShelvesEnv()
    assert env._advance_if_done() == ""  # current predicate does not hold yet
    assert env._current_msg == 0
    env._state["shelf"]["blue"] = "C"  # the *second* instruction's predicate: not yet checked
    assert env._advance_if_done() == ""
    env._state["shelf"]["red"] = "B"
    assert env._advance_if_done() == "\n\n[Next instruction] Move blue to C."
    assert env._current_msg == 1
    assert env._advance_if_done() == "\n\n[Next instruction] Move green to B."  # already holds
    env._state["shelf"]["green"] = "B"
    assert env._advance_if_done() == "\n\n[All instructions complete] Reply <answer>done</answer>."
    assert env._current_msg == 3
    assert env._advance_if_done() == ""  # nothing left to reveal


def test_advance_if_done_without_instructions_is_empty() -> None:
    assert PriceEnv()._advance_if_done() == ""


def test_done_is_accepted_only_after_every_instruction() -> None:
    env = ShelvesEnv(max_turns=10)
    obs, reward, terminated, truncated, _ = env.step("<answer>done</answer>")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs == "Not all instructions are complete yet: you are on step 1/3: Move red to B."
    obs, *_ = env.step(call("move", box="red", shelf="B"))
    assert obs == "[move] red on B.\n\n[Next instruction] Move blue to C."
    env.step(call("move", box="blue", shelf="C"))
    assert env.step("<answer>DONE</answer>")[1:3] == (0.0, False)  # one instruction left
    obs, *_ = env.step(call("move", box="green", shelf="B"))
    assert obs.endswith("[All instructions complete] Reply <answer>done</answer>.")
    assert env.step("<answer> Done </answer>") == ("Correct!", 1.0, True, False, {})


def test_reset_restarts_the_instructions() -> None:
    env = ShelvesEnv()
    env.step(call("move", box="red", shelf="B"))
    env.step(call("move", box="blue", shelf="C"))
    env.step(call("move", box="green", shelf="B"))
    assert env.step("<answer>done</answer>")[1] == 1.0
    env.reset(seed=1)
    assert env.step("<answer>done</answer>")[1:3] == (0.0, False)


# --- loader: instantiate / find_env_class / build_namespace ------------------------------------


class WithMaxTurns:
    def __init__(self, max_turns: int = 50, difficulty: int = 1) -> None:
        self.max_turns, self.difficulty = max_turns, difficulty


class NoArgs:
    def __init__(self) -> None:
        self.max_turns = 100


class NoArgsSmallCap:
    def __init__(self) -> None:
        self.max_turns = 5


class NoArgsNoCap:
    pass


class VarKw:
    def __init__(self, **kwargs: typing.Any) -> None:
        self.kwargs = kwargs


def test_instantiate_with_max_turns() -> None:
    env = instantiate(WithMaxTurns, 25)
    assert (env.max_turns, env.difficulty) == (25, 1)
    env = instantiate(WithMaxTurns, 7, {"difficulty": 3})
    assert (env.max_turns, env.difficulty) == (7, 3)
    assert instantiate(VarKw, 9, {"difficulty": 2}).kwargs == {"difficulty": 2}  # no max_turns=
    assert instantiate(PriceEnv, 4).max_turns == 4  # inherited from ToolUseBaseEnv


def test_instantiate_keeps_a_smaller_own_cap() -> None:
    assert instantiate(WithMaxTurns, 60).max_turns == 50  # its default, below the budget


def test_instantiate_without_max_turns_caps_its_own() -> None:
    assert instantiate(NoArgs, 25).max_turns == 25  # lowered to the budget
    assert instantiate(NoArgsSmallCap, 25).max_turns == 5  # never raised
    assert not hasattr(instantiate(NoArgsNoCap, 25), "max_turns")


def test_instantiate_does_not_mutate_kwargs() -> None:
    kwargs = {"difficulty": 2}
    instantiate(WithMaxTurns, 3, kwargs)
    assert kwargs == {"difficulty": 2}


def _load(source: str) -> type:
    namespace = build_namespace()
    exec(compile(source, "<test>", "exec"), namespace)
    return find_env_class(source, namespace)


def test_find_env_class_picks_the_first_env_class() -> None:
    source = (
        "class Helper:\n    pass\n"
        "class Env:\n    pass\n"
        "class ToolUseBaseEnv:\n    pass\n"  # a file that ships its own copy of the base class
        "class FirstEnv(ToolUseBaseEnv):\n    pass\n"
        "class SecondEnv:\n    pass\n"
        "def make():\n    class InnerEnv:\n        pass\n"
    )
    assert env_class_names(source) == ["FirstEnv", "SecondEnv"]
    assert _load(source).__name__ == "FirstEnv"


def test_find_env_class_skips_the_base_class_and_sees_subclasses() -> None:
    source = (
        "class ShopEnv(ToolUseBaseEnv):\n    def reset(self, seed=None):\n        return '', {}\n"
    )
    cls = _load(source)
    assert cls.__name__ == "ShopEnv" and issubclass(cls, ToolUseBaseEnv)


@pytest.mark.parametrize(
    "source",
    [
        "class Game:\n    pass\n",
        "class Env:\n    pass\nclass ToolUseBaseEnv:\n    pass\n",
        "if True:\n    class HiddenEnv:\n        pass\n",  # not top level
        "class LateEnv:\n    pass\nLateEnv = 3\n",  # not a class after execution
    ],
)
def test_find_env_class_errors(source: str) -> None:
    with pytest.raises(LookupError):
        _load(source)


def test_env_class_names_raises_syntax_error() -> None:
    with pytest.raises(SyntaxError):
        env_class_names("class BrokenEnv(:\n")


def test_build_namespace_contents() -> None:
    ns = build_namespace()
    assert ns["__name__"] == "spade_env"
    assert "__builtins__" in ns
    for name in (
        "math random re json itertools collections functools string copy heapq operator statistics"
    ).split():
        assert ns[name].__name__ == name, name
    assert ns["deque"] is collections.deque and ns["defaultdict"] is collections.defaultdict
    assert ns["Counter"] is collections.Counter and ns["OrderedDict"] is collections.OrderedDict
    assert ns["namedtuple"] is collections.namedtuple
    assert ns["combinations"] is itertools.combinations
    assert ns["permutations"] is itertools.permutations and ns["product"] is itertools.product
    assert ns["accumulate"] is itertools.accumulate
    assert ns["reduce"] is functools.reduce and ns["lru_cache"] is functools.lru_cache
    assert ns["partial"] is functools.partial and ns["deepcopy"].__name__ == "deepcopy"
    for name in ("Any", "Dict", "List", "Optional", "Tuple", "Set", "Union", "Callable"):
        assert ns[name] is getattr(typing, name)
    assert ns["ToolUseBaseEnv"] is ToolUseBaseEnv
    np = pytest.importorskip("numpy")
    assert ns["np"] is np


def test_build_namespace_is_fresh_each_time() -> None:
    first = build_namespace()
    first["leak"] = 1
    first["math"] = None
    second = build_namespace()
    assert "leak" not in second and second["math"] is math
    assert set(runtime.PREFILLED_MODULES) <= set(second)


def test_prefilled_names_work_without_imports() -> None:
    source = (
        "class CalcEnv:\n"
        "    def reset(self, seed=None):\n"
        "        rng = random.Random(seed)\n"
        "        c = Counter(rng.choice('ab') for _ in range(5))\n"
        "        arr = np.arange(3) if 'np' in globals() else [0, 1, 2]\n"
        "        return json.dumps([sorted(c), int(sum(arr)), math.floor(2.5)]), {}\n"
    )
    obs, info = _load(source)().reset(seed=0)
    assert json.loads(obs)[1:] == [3, 2] and info == {}
