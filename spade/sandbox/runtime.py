"""The environment runtime: what a generated environment file sees, and how it is found and built.

Standard library only: this module is imported by the sandbox worker (which runs without
site-packages) and by trusted code for the pure parsing helpers. It implements the contract in
`docs/environments.md`, compatible with the paper's reference release (SPADE.md section 8):

- `build_namespace()`: the pre-filled globals a generated file may use without importing;
- `find_env_class()`: the first top-level class whose name ends in `Env`;
- `instantiate()`: constructor with no arguments and the game's own `max_turns` capped at the
  budget (the reference's order), falling back to `max_turns=`;
- `ToolUseBaseEnv`: the tool-use base class, available to generated files without import;
- `QuestionEnv`, `GameEnv` (`scaffolds.py`): compact bases, a fresh copy for every file;
- `extract_boxed()`, `boxed_contents()`, `parse_tool_calls()`, `parse_answer()`,
  `answers_match()`: action parsing (trusted code's one `\\boxed{}` parser too).

Nothing here is a security boundary: code running in the worker can monkeypatch all of it. The
trusted supervisor re-validates every result it receives.
"""

from __future__ import annotations

import ast
import collections
import copy
import functools
import heapq
import importlib
import itertools
import json
import math
import os
import re
import typing
import warnings

PREFILLED_MODULES = (
    "math random re json itertools collections functools string copy heapq operator statistics"
).split()
SKIPPED_CLASS_NAMES = frozenset({"Env", "ToolUseBaseEnv"})
SCAFFOLD_NAMES = ("QuestionEnv", "GameEnv")
"""The compact bases of `scaffolds.py`. Skipped by class discovery like `ToolUseBaseEnv`, except
in a file whose only `*Env` class is its own class of that name."""

_SCAFFOLD_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scaffolds.py")
with open(_SCAFFOLD_PATH, encoding="utf-8") as _f:
    SCAFFOLD_SOURCE = _f.read()
_SCAFFOLD_CODE = compile(SCAFFOLD_SOURCE, "<spade scaffolds>", "exec")


def scaffolds() -> dict[str, type]:
    """Fresh scaffold classes (a new copy each call: tampering with one stays in its file)."""
    ns: dict[str, typing.Any] = {"__name__": "spade_scaffolds", "__builtins__": __builtins__}
    exec(_SCAFFOLD_CODE, ns)
    return {name: ns[name] for name in SCAFFOLD_NAMES}


def build_namespace() -> dict[str, typing.Any]:
    """Fresh globals for one environment file, pre-filled like the reference loader's."""
    ns: dict[str, typing.Any] = {"__name__": "spade_env", "__builtins__": __builtins__}
    for name in PREFILLED_MODULES:
        ns[name] = importlib.import_module(name)
    ns.update(
        deque=collections.deque,
        defaultdict=collections.defaultdict,
        Counter=collections.Counter,
        OrderedDict=collections.OrderedDict,
        namedtuple=collections.namedtuple,
        combinations=itertools.combinations,
        permutations=itertools.permutations,
        product=itertools.product,
        accumulate=itertools.accumulate,
        reduce=functools.reduce,
        lru_cache=functools.lru_cache,
        partial=functools.partial,
        chain=itertools.chain,
        heappush=heapq.heappush,
        heappop=heapq.heappop,
        deepcopy=copy.deepcopy,
        ToolUseBaseEnv=ToolUseBaseEnv,
        **scaffolds(),
    )
    for name in TYPING_NAMES:
        ns[name] = getattr(typing, name)
    try:  # numpy is optional; the reference pre-imported it as `numpy` and `np`
        import numpy

        ns["np"] = ns["numpy"] = numpy
    except ImportError:
        pass
    return ns


TYPING_NAMES = (
    "Any Dict List Optional Tuple Set FrozenSet Union Callable Iterable Sequence Mapping"
).split()


def env_class_names(source: str) -> list[str]:
    """Top-level class names ending in `Env`, in source order (raises SyntaxError)."""
    with warnings.catch_warnings():  # invalid escape sequences in model-written code: not ours
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    names = [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and node.name.endswith("Env")
        and node.name not in SKIPPED_CLASS_NAMES
    ]
    chosen = [n for n in names if n not in SCAFFOLD_NAMES]
    return chosen or names[:1]


def find_env_class(source: str, namespace: dict[str, typing.Any]) -> type:
    """The environment class of an executed file: the first top-level `*Env` class."""
    names = env_class_names(source)
    if not names:
        raise LookupError("no top-level class whose name ends in 'Env'")
    cls = namespace.get(names[0])
    if not isinstance(cls, type):
        raise LookupError(f"{names[0]} is not a class after executing the file")
    return cls


def instantiate(
    cls: type, max_turns: int, kwargs: dict[str, typing.Any] | None = None
) -> typing.Any:
    """Build the environment as the reference does: with no arguments (besides `kwargs`, such as
    `difficulty=`), its own `max_turns` then capped at the budget; a constructor that needs
    `max_turns` gets the budget. The episode's cap is `turn_cap(env, max_turns)`."""
    kwargs = dict(kwargs or {})
    try:
        env = cls(**kwargs)
    except TypeError as exc:
        if "max_turns" not in str(exc):
            raise
        return cls(max_turns=max_turns, **kwargs)
    own = getattr(env, "max_turns", None)
    if isinstance(own, int) and not isinstance(own, bool) and own > max_turns:
        env.max_turns = max_turns
    return env


def turn_cap(env: typing.Any, budget: int) -> int:
    """Turns an episode may last: the game's own positive `max_turns`, at most the budget."""
    own = getattr(env, "max_turns", None)
    if isinstance(own, int) and not isinstance(own, bool) and 0 < own < budget:
        return own
    return budget


# --- action parsing -------------------------------------------------------------------------


_BOX = "\\boxed{"


def _box_end(text: str, start: int) -> int | None:
    """Index of the brace that closes a box whose content starts at `start` (braces balanced);
    None if the box is never closed."""
    depth = 1
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return None


def extract_boxed(text: str) -> str | None:
    """Content of the first `\\boxed{...}` in `text`, braces balanced; None if there is none
    (or the first one is never closed)."""
    start = text.find(_BOX)
    if start < 0:
        return None
    i = start + len(_BOX)
    end = _box_end(text, i)
    return None if end is None else text[i:end]


def boxed_contents(text: str) -> list[str]:
    """Content of every `\\boxed{...}` in `text`, braces balanced, in the order they open (a box
    inside another counts too); boxes never closed are skipped. The hint gate
    (`spade.rewards.solution_strings`) searches hints for these."""
    found = []
    start = text.find(_BOX)
    while start != -1:
        i = start + len(_BOX)
        end = _box_end(text, i)
        if end is not None:
            found.append(text[i:end])
        start = text.find(_BOX, start + 1)
    return found


def game_action(reply: str) -> str:
    """The action a game receives: the reply's first box re-wrapped, else the raw text."""
    content = extract_boxed(reply)
    return reply if content is None else "\\boxed{" + content + "}"


_TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_XML_FUNCTION_RE = re.compile(r"<function=([\w.\-]+)>(.*?)</function>", re.DOTALL)
_XML_PARAM_RE = re.compile(r"<parameter=([\w.\-]+)>(.*?)</parameter>", re.DOTALL)
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def _xml_value(raw: str) -> typing.Any:
    raw = raw.strip()
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def parse_tool_calls(text: str) -> list[tuple[str, dict[str, typing.Any]]] | None:
    """Tool calls in a reply, in order; None if a `<tool_call>` block is present but unparsable."""
    calls: list[tuple[str, dict[str, typing.Any]]] = []
    for body in _TOOL_CALL_RE.findall(text):
        xml = _XML_FUNCTION_RE.search(body)
        if xml:
            params = {k: _xml_value(v) for k, v in _XML_PARAM_RE.findall(xml.group(2))}
            calls.append((xml.group(1), params))
            continue
        try:
            obj = json.loads(body)
        except ValueError:
            return None
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return None
        args = obj.get("arguments", {})
        if isinstance(args, str):  # OpenAI sends arguments as a JSON string
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                return None
        if not isinstance(args, dict):
            return None
        calls.append((obj["name"], args))
    if not calls:  # bare Qwen XML form without the <tool_call> wrapper
        for name, body in _XML_FUNCTION_RE.findall(text):
            calls.append((name, {k: _xml_value(v) for k, v in _XML_PARAM_RE.findall(body)}))
    return calls


def parse_answer(text: str) -> str | None:
    match = _ANSWER_RE.search(text)
    return None if match is None else match.group(1).strip()


def _as_number(text: str) -> float | None:
    try:
        value = float(text.replace("$", "").replace(",", "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def answers_match(given: str, expected: typing.Any) -> bool:
    """Reference rule: case-insensitive exact match, or numbers within 0.01 (ignoring `$`, `,`)."""
    if expected is None:
        return False
    want = str(expected).strip()
    if given.strip().lower() == want.lower():
        return True
    a, b = _as_number(given), _as_number(want)
    return a is not None and b is not None and abs(a - b) <= 0.01 + 1e-9  # 1.01 vs 1 counts


# --- the tool-use base class ----------------------------------------------------------------


class ToolUseBaseEnv:
    """Base class for tool-use environments, compatible with the paper's reference release.

    Subclasses implement `reset(seed)` (filling `_state`, `_tools`, `_expected_answer`) and one
    `tool_<name>(**kwargs) -> str` method per tool. See docs/environments.md.
    """

    def __init__(self, max_turns: int = 10, **kwargs: typing.Any) -> None:
        self.max_turns = max_turns
        self.turn_count = 0
        self._tools: dict[str, dict[str, typing.Any]] = {}
        self._state: dict[str, typing.Any] = {}
        self._call_history: list[dict[str, typing.Any]] = []
        self._expected_answer: typing.Any = None
        self._user_messages: list[str] = []
        self._message_criteria: list[typing.Callable[[dict[str, typing.Any]], bool]] = []
        self._current_msg = 0
        self.reset()

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, typing.Any]]:
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs: typing.Any) -> None:
        super().__init_subclass__(**kwargs)
        if "reset" in cls.__dict__:  # every subclass reset starts with the bookkeeping cleared
            original = cls.__dict__["reset"]

            @functools.wraps(original)
            def reset(self: ToolUseBaseEnv, *args: typing.Any, **kw: typing.Any) -> typing.Any:
                self.begin_episode()
                return original(self, *args, **kw)

            cls.reset = reset  # type: ignore[method-assign]

    def begin_episode(self) -> None:
        """Clear per-episode bookkeeping; called before every subclass `reset`.

        Reference subclasses fill `_state` in `reset` but often leave the counters alone, so a
        reused instance would start its next episode at the turn limit (or with "done" accepted).
        """
        self.turn_count = 0
        self._call_history = []
        self._current_msg = 0

    def get_tools(self) -> list[dict[str, typing.Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": spec.get("description", ""),
                    "parameters": spec.get("parameters", {"type": "object", "properties": {}}),
                },
            }
            for name, spec in self._tools.items()
        ]

    def execute_tool(self, name: str, args: dict[str, typing.Any]) -> dict[str, typing.Any]:
        """Run one tool; never counts as a turn. Errors are results, not exceptions.

        Like the reference, any `tool_<name>` method runs, declared in `_tools` or not.
        """
        method = getattr(self, f"tool_{name}", None) if isinstance(name, str) else None
        if not callable(method):
            return {"output": f"Unknown tool '{name}'. {self._tool_list()}", "returncode": 1}
        if not isinstance(args, dict):
            args = {}
        self._call_history.append({"name": name, "arguments": args})
        try:
            return {"output": str(method(**args)), "returncode": 0}
        except Exception as exc:  # noqa: BLE001 - the tool's own bug or bad arguments: the agent sees it
            return {"output": f"Error: {type(exc).__name__}: {exc}", "returncode": 1}

    def _obs_suffix(self) -> str:
        """Kept for older reference files that append it in `reset`; tools now reach the agent
        through the chat template, so it adds nothing (as in the reference)."""
        return ""

    def _check_answer(self, answer: str) -> bool:
        """Is `answer` the expected one? Override for custom comparison (the reference's hook)."""
        return answers_match(answer, self._expected_answer)

    def _tool_list(self) -> str:
        return "Available tools: " + ", ".join(sorted(self._tools))

    def _advance_if_done(self) -> str:
        """Reveal the next instruction once the current one's predicate holds on `_state`."""
        if not self._user_messages or self._current_msg >= len(self._user_messages):
            return ""
        if not self._message_criteria[self._current_msg](self._state):
            return ""
        self._current_msg += 1
        if self._current_msg < len(self._user_messages):
            return f"\n\n[Next instruction] {self._user_messages[self._current_msg]}"
        return "\n\n[All instructions complete] Reply <answer>done</answer>."

    def _all_instructions_done(self) -> bool:
        return not self._user_messages or self._current_msg >= len(self._user_messages)

    def solution(self) -> typing.Any:
        return None

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, typing.Any]]:
        """One turn. An `<answer>` is handled first (as in the reference: tool calls in the same
        reply do not run); otherwise every tool call runs, in order."""
        self.turn_count += 1
        answer = parse_answer(action)
        if answer is not None:
            if self._all_instructions_done() and self._check_answer(answer):
                return "Correct!", 1.0, True, False, {}
            feedback = "Incorrect answer."
            if not self._all_instructions_done():
                step = self._user_messages[self._current_msg]
                feedback = (
                    f"Not all instructions are complete yet: you are on step "
                    f"{self._current_msg + 1}/{len(self._user_messages)}: {step}"
                )
            return self._turn_limited(feedback, 0.0)
        outputs = []
        for name, args in parse_tool_calls(action) or []:
            if not callable(getattr(self, f"tool_{name}", None)):
                outputs.append(f"Unknown tool '{name}'. {self._tool_list()}")
                continue
            outputs.append(f"[{name}] {self.execute_tool(name, args)['output']}")
        if outputs:
            return self._turn_limited("\n".join(outputs), 0.0)
        obs = (
            "No tool call or answer found. Call a tool with "
            '<tool_call>{"name": ..., "arguments": {...}}</tool_call> or finish with '
            "<answer>...</answer>. " + self._tool_list()
        )
        return self._turn_limited(obs, -0.1)

    def _turn_limited(
        self, obs: str, reward: float
    ) -> tuple[str, float, bool, bool, dict[str, typing.Any]]:
        if self.turn_count >= self.max_turns:
            return (
                f"{obs}\nTurn limit reached. Solution: {self.solution()}",
                reward,
                False,
                True,
                {},
            )
        return obs, reward, False, False, {}
