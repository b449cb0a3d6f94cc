"""BFCL v4 (Apache-2.0, `bfcl-eval`, installed `--no-deps`): tool use, scored by BFCL's checkers.

Single-turn categories become one-turn tool environments: the item's functions are the tools
(BFCL's `"type": "dict"` schemas rewritten as JSON Schema), the reply's tool calls (parsed by the
rollout's own parser) are checked by BFCL's `ast_checker`; in the irrelevance categories a win is
a reply with no call, in `live_relevance` any call. Tools are never executed.

Multi-turn categories become multi-turn tool environments: BFCL's stateful backends (file system,
messaging, trading...) execute each call, the result is the next observation, a reply without a
call ends the user's turn and the next user message follows; after the last turn BFCL's
`multi_turn_checker` replays the calls on fresh backends and compares state and responses. The
backends `eval()` call strings, so everything runs in the sandbox; the call strings are built
from parsed JSON (a known tool name, identifier keys, `repr` of the values), never from raw text.

Traps handled: `ast_checker` imports `bfcl_eval.constants.model_config` (every provider SDK) only
to read `underscore_to_dot`: each program installs a stub module first (dots stay dots). The
backends keep instances in module globals keyed by a model name: each episode uses its own.
Excluded, with reasons, in `EXCLUDED`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

from spade.types import Program

SINGLE_TURN = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_param", "multi_turn_long_context")
NO_CALL = ("irrelevance", "live_irrelevance")
"""A win is a reply that calls nothing."""

EXCLUDED = {
    "simple_java": "arguments are Java source strings; our tool calls carry JSON values",
    "simple_javascript": "arguments are JavaScript source strings; our tool calls carry JSON",
    "multi_turn_miss_func": "its functions are revealed mid-episode; an environment's tool list"
    " is fixed when it loads",
    "web_search": "needs SerpAPI (network)",
    "memory": "needs faiss and sentence-transformers, and a prerequisite conversation",
    "format_sensitivity": "varies BFCL's own prompt format, which our chat template replaces",
}

DEFAULT_SUBSETS = ("simple_python", "multiple", "parallel", "irrelevance", "multi_turn_base")

INSTRUCTION = (
    "\n\n(Call the tools that the request needs. If no tool fits the request, say so without "
    "calling one.)"
)
TURN_END = "When this request is done, reply without a tool call."

_STUB = """import collections
import sys
import types

_config = types.ModuleType("bfcl_eval.constants.model_config")
_config.MODEL_CONFIG_MAPPING = collections.defaultdict(
    lambda: types.SimpleNamespace(underscore_to_dot=False)
)
sys.modules.setdefault("bfcl_eval.constants.model_config", _config)
"""

SINGLE_TEMPLATE = (
    '''"""BFCL v4 {category} item {id} (Apache-2.0, gorilla.cs.berkeley.edu)."""
'''
    + _STUB
    + """
from bfcl_eval.constants.enums import Language
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

# the rollout's own parser, from the runtime that provides ToolUseBaseEnv
parse_tool_calls = sys.modules[ToolUseBaseEnv.__module__].parse_tool_calls

ITEM = {item!r}


class BfclEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=1, **kwargs):
        super().__init__(max_turns=1)

    def reset(self, seed=None):
        self._tools = {{t["name"]: t for t in ITEM["tools"]}}
        return ITEM["prompt"], {{}}

    def step(self, action):
        self.turn_count += 1
        calls = parse_tool_calls(str(action)) or []
        category = ITEM["category"]
        if category in {no_call!r}:
            won = not calls
        elif category == "live_relevance":
            won = bool(calls)
        else:
            output = [{{name: args}} for name, args in calls]
            verdict = ast_checker(
                ITEM["functions"], output, ITEM["answer"], Language.PYTHON, category, "spade"
            )
            won = bool(calls) and verdict["valid"]
        return ("Correct." if won else "Incorrect."), (1.0 if won else 0.0), True, False, {{}}

    def solution(self):
        return ITEM["solution"]
"""
)

MULTI_TEMPLATE = (
    '''"""BFCL v4 {category} item {id} (Apache-2.0, gorilla.cs.berkeley.edu)."""
import itertools
import re
'''
    + _STUB
    + """
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

# the rollout's own parser, from the runtime that provides ToolUseBaseEnv
parse_tool_calls = sys.modules[ToolUseBaseEnv.__module__].parse_tool_calls

ITEM = {item!r}
TURN_END = {turn_end!r}
_EPISODES = itertools.count()


def _call_string(name, args, tools):
    if name not in tools or not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) for k in args):
        return None
    return name + "(" + ", ".join(k + "=" + repr(v) for k, v in args.items()) + ")"


class BfclMultiTurnEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=None, **kwargs):
        super().__init__(max_turns=ITEM["max_turns"])

    def reset(self, seed=None):
        self._tools = {{t["name"]: t for t in ITEM["tools"]}}
        # the backends cache instances in module globals under a model name: one per episode
        self._model = "spade" + str(next(_EPISODES))
        self._user_turn = 0
        self._calls = [[]]
        return ITEM["turns"][0] + "\\n\\n" + TURN_END, {{}}

    def step(self, action):
        self.turn_count += 1
        calls = parse_tool_calls(str(action)) or []
        if calls:
            strings, lines = [], []
            for name, args in calls:
                call = _call_string(name, args, self._tools)
                if call is None:
                    lines.append("[" + str(name) + "] Error: no such tool")
                else:
                    strings.append(call)
            if strings:
                results, _ = execute_multi_turn_func_call(
                    strings,
                    ITEM["initial_config"],
                    ITEM["involved_classes"],
                    self._model,
                    ITEM["id"],
                    long_context=ITEM["long_context"],
                )
                self._calls[self._user_turn].append(strings)
                lines += ["[" + s.split("(")[0] + "] " + str(r) for s, r in zip(strings, results)]
            observation = "\\n".join(lines)
        else:  # a reply without a call ends the user's turn
            self._user_turn += 1
            if self._user_turn == len(ITEM["turns"]):
                verdict = multi_turn_checker(
                    self._calls, ITEM["answer"], ITEM["entry"], ITEM["category"], self._model
                )
                won = bool(verdict.get("valid"))
                return ("Correct." if won else "Incorrect."), float(won), True, False, {{}}
            self._calls.append([])
            observation = ITEM["turns"][self._user_turn] + "\\n\\n" + TURN_END
        if self.turn_count >= self.max_turns:
            return observation + "\\nTurn limit reached.", 0.0, False, True, {{}}
        return observation, 0.0, False, False, {{}}

    def solution(self):
        return ITEM["solution"]
"""
)


def _jsonl(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _data() -> Any:
    return resources.files("bfcl_eval") / "data"


def _schema(spec: Any) -> Any:
    """BFCL's parameter schema as JSON Schema (`dict` -> object, `float` -> number, ...)."""
    if not isinstance(spec, dict):
        return spec
    out = {k: v for k, v in spec.items() if k != "type"}
    if isinstance(spec.get("properties"), dict):
        out["properties"] = {k: _schema(v) for k, v in spec["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(spec.get(key), dict):
            out[key] = _schema(spec[key])
    kind = spec.get("type")
    if isinstance(kind, str):
        kind = {"dict": "object", "float": "number", "tuple": "array"}.get(kind, kind)
        if kind != "any":
            out["type"] = kind
    return out


def _tools(functions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": f["name"],
            "description": f.get("description", ""),
            "parameters": _schema(f.get("parameters", {"type": "dict", "properties": {}})),
        }
        for f in functions
    ]


def _pick(options: list[Any]) -> tuple[bool, Any]:
    """The first acceptable value of a possible-answer list other than `""` (which marks a
    parameter that may be left out); (False, None) when `""` is all there is."""
    for value in options:
        if value != "":
            return True, _value(value)
    return False, None


def _value(value: Any) -> Any:
    if isinstance(value, dict):  # a nested dict's keys hold option lists too
        out = {}
        for key, options in value.items():
            keep, chosen = _pick(options) if isinstance(options, list) else (True, options)
            if keep:
                out[key] = chosen
        return out
    if isinstance(value, list):  # a list of dicts: each dict's keys hold option lists
        return [_value(v) if isinstance(v, dict) else v for v in value]
    return value


def _block(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


def _tool_calls(answer: list[dict[str, Any]], functions: Sequence[dict[str, Any]]) -> str:
    """A ground truth as one reply of `<tool_call>` blocks: an optional parameter that may be
    left out (`""` among its options) is; every other takes its first listed value."""
    required = {f["name"]: set(f.get("parameters", {}).get("required", [])) for f in functions}
    blocks = []
    for call in answer:
        ((name, params),) = call.items()
        args = {}
        for key, options in params.items():
            if "" in options and key not in required.get(name, set()):
                continue
            keep, chosen = _pick(options)
            if keep:
                args[key] = chosen
        blocks.append(_block(name, args))
    return "\n".join(blocks)


def _single(category: str, item: dict[str, Any], answer: list[dict[str, Any]] | None) -> str:
    messages = item["question"][0]
    prompt = "\n\n".join(str(m["content"]) for m in messages) + INSTRUCTION
    if category in NO_CALL:
        solution: Any = "<answer>None of the tools fits this request.</answer>"
    elif answer is None:  # live_relevance: any call is right, none is given
        solution = None
    else:
        solution = _tool_calls(answer, item["function"])
    data = {
        "id": item["id"],
        "category": category,
        "prompt": prompt,
        "functions": item["function"],
        "tools": _tools(item["function"]),
        "answer": answer,
        "solution": solution,
    }
    return SINGLE_TEMPLATE.format(category=category, id=item["id"], item=data, no_call=NO_CALL)


_DOCS: dict[str, list[dict[str, Any]]] = {}


def _class_docs(name: str) -> list[dict[str, Any]]:
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    if name not in _DOCS:
        path = _data() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[name]
        _DOCS[name] = _jsonl(path)
    return _DOCS[name]


def _multi(category: str, item: dict[str, Any], answer: list[list[str]]) -> str:
    excluded = set(item.get("excluded_function", []))
    functions = [
        f for c in item["involved_classes"] for f in _class_docs(c) if f["name"] not in excluded
    ]
    turns = [" ".join(str(m["content"]) for m in turn) for turn in item["question"]]
    tools = _tools(functions)
    solution = []
    for calls in answer:
        if calls:
            solution.append("\n".join(_ground_truth_block(c, tools) for c in calls))
        solution.append("Done.")
    data = {
        "id": item["id"],
        "category": category,
        "turns": turns,
        "tools": tools,
        "initial_config": item["initial_config"],
        "involved_classes": item["involved_classes"],
        "long_context": "long_context" in category,
        "entry": {k: item[k] for k in ("id", "initial_config", "involved_classes")},
        "answer": answer,
        "solution": solution,
        "max_turns": max(len(solution), 5 * len(turns)),
    }
    return MULTI_TEMPLATE.format(category=category, id=item["id"], item=data, turn_end=TURN_END)


def _ground_truth_block(text: str, tools: list[dict[str, Any]]) -> str:
    """A ground-truth call string as a `<tool_call>` block; positional arguments are named
    from the tool's parameter order (`sort('a.pdf')` -> `{"file_name": "a.pdf"}`)."""
    import ast

    call = ast.parse(text, mode="eval").body
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name), text
    name = call.func.id
    params = next(
        (list(t["parameters"].get("properties", {})) for t in tools if t["name"] == name), []
    )
    args = {params[i]: ast.literal_eval(a) for i, a in enumerate(call.args)}
    args.update({kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg})
    return _block(name, args)


def programs(
    subsets: Sequence[str], *, limit: int, level: int | None = None, seed: int = 0
) -> list[Program]:
    """The first `limit` items of each category in `subsets` (empty: `DEFAULT_SUBSETS`);
    skill `bfcl:<category>`. BFCL's items are fixed: no levels, `seed` does not change them."""
    if level is not None:
        raise ValueError("bfcl has no levels")
    names = list(subsets) or list(DEFAULT_SUBSETS)
    for name in names:
        if name in EXCLUDED:
            raise ValueError(f"bfcl:{name} is excluded: {EXCLUDED[name]}")
        if name not in SINGLE_TURN + MULTI_TURN:
            known = ", ".join(SINGLE_TURN + MULTI_TURN)
            raise ValueError(f"bfcl has no category {name!r}: choose from {known}")
    out = []
    for name in names:
        items = _jsonl(_data() / f"BFCL_v4_{name}.json")[:limit]
        answers: dict[str, Any] = {}
        answer_file = _data() / "possible_answer" / f"BFCL_v4_{name}.json"
        if answer_file.is_file():
            answers = {a["id"]: a["ground_truth"] for a in _jsonl(answer_file)}
        for item in items:
            if name in MULTI_TURN:
                code = _multi(name, item, answers[item["id"]])
            else:
                code = _single(name, item, answers.get(item["id"]))
            out.append(
                Program.from_code(code, skill=f"bfcl:{name}", source=f"bfcl:{name}/{item['id']}")
            )
    return out
