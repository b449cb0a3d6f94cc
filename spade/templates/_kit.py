"""The shared skeleton every family renders through: header, parsing, levels, step plumbing.

A family writes its methods as text with two kinds of placeholders:

- `$name` (string.Template): names and small expressions, e.g. `self.$turn`, `$info`, `$bad`;
- a line that is only `@block` (e.g. `@parse`, `@guard`): replaced by that block's lines at the
  line's indentation (a block may be empty, then the line disappears).

The `Style` is drawn once per program and decides the structural choices shared by all families
(how the action is parsed, how `info` is built, where the difficulty table lives, attribute
names, an optional done-guard, the invalid-move penalty, method order). Families add their own
mechanics options, names and parameters on top, so two renders of one family rarely share the
same token 5-grams.
"""

from __future__ import annotations

import random
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from string import Template

LEVELS = (1, 2, 3)


@dataclass(frozen=True)
class Rendered:
    """One rendered environment program and what the Designer reply needs besides the code."""

    code: str
    hint: str
    skill: str
    family: str


@dataclass
class Style:
    """Structural choices shared by every family; drawn from the render's rng."""

    parse: str
    parse_name: str
    regex: str
    info: str
    guard: bool
    guard_text: str
    bad: str
    levels: str
    turn: str
    done: str
    clamp: bool
    max_turns: int
    helpers_first: bool

    @classmethod
    def draw(cls, rng: random.Random) -> Style:
        parse = rng.choice(["function", "method", "inline"])
        names = {
            "function": ["_content", "_extract", "_boxed", "parse_action", "_unbox"],
            "method": ["_parse", "_read", "_action_text", "_unbox"],
            "inline": [""],
        }[parse]
        return cls(
            parse=parse,
            parse_name=rng.choice(names),
            regex=rng.choice([r"\\boxed\{(.*?)\}", r"\\boxed\{([^}]*)\}", r"\\boxed\{(.+?)\}"]),
            info=rng.choice(["empty", "empty", "empty", "method", "inline"]),
            guard=rng.random() < 0.3,
            guard_text=rng.choice(
                ["The episode is over.", "The game has ended.", "Game over.", "Already finished."]
            ),
            bad=rng.choice(["0.0", "-0.1", "-0.05", "-0.2"]),
            levels=rng.choice(["table", "list", "class"]),
            turn=rng.choice(["turn", "turns", "n_turns", "t", "step_count"]),
            done=rng.choice(["done", "over", "finished", "ended"]),
            clamp=rng.random() < 0.3,
            # the runtime plays a game up to its own max_turns (capped at the budget, 25 by
            # default): a default below the budget would cut long solutions short
            max_turns=rng.choice([25, 30, 40, 50]),
            helpers_first=rng.random() < 0.5,
        )

    def info_expr(self) -> str:
        return {
            "empty": "{}",
            "method": "self._info()",
            "inline": f'{{"turn": self.{self.turn}}}',
        }[self.info]


@dataclass
class Spec:
    """What a family hands to `assemble`."""

    skill: str
    family: str
    description: str
    hint: str
    class_name: str
    levels: Sequence[tuple[str, tuple[object, ...]]]
    """(attribute, (level 1, level 2, level 3)) pairs, rendered by the style."""
    methods: Sequence[str]
    """reset, step (and solution last) with placeholders; the first two keep their order."""
    helpers: Sequence[str] = ()
    """Extra methods, placed before or after reset/step by the style."""
    names: Mapping[str, str] = field(default_factory=dict)
    blocks: Mapping[str, Sequence[str]] = field(default_factory=dict)
    init: Sequence[str] = ()
    """Extra __init__ lines (placeholders allowed)."""
    module: Sequence[str] = ()
    """Module-level definitions (constants, helper functions), each a dedented text."""
    imports: Sequence[str] = ()
    turns: str = "multi"
    info_fields: Sequence[str] = ()
    """Extra `key: expression` pairs for the `_info()` method."""


def _expand(lines: Sequence[str], blocks: Mapping[str, Sequence[str]], depth: int = 0) -> list[str]:
    out: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("@") and stripped[1:] in blocks and depth < 3:
            pad = line[: len(line) - len(line.lstrip())]
            inner = _expand(blocks[stripped[1:]], blocks, depth + 1)
            out += [pad + b if b else b for b in inner]
        else:
            out.append(line)
    return out


def _fill(text: str, blocks: Mapping[str, Sequence[str]], names: Mapping[str, str]) -> str:
    out = _expand(textwrap.dedent(text).strip("\n").split("\n"), blocks)
    text = "\n".join(out)
    for _ in range(3):  # names may hold placeholders themselves
        text = Template(text).safe_substitute(names)
    return Template(text).substitute({})


def _indent(text: str, spaces: int = 4) -> str:
    return textwrap.indent(text, " " * spaces, lambda line: bool(line.strip()))


def _literal(value: object) -> str:
    return repr(value)


def _level_lines(style: Style, levels: Sequence[tuple[str, tuple[object, ...]]]):
    """(module or class table lines, __init__ lines)."""
    if not levels:
        return [], [], []
    attrs = [a for a, _ in levels]
    if style.levels == "list":
        return (
            [],
            [],
            [f"self.{a} = ({', '.join(map(_literal, v))})[self.difficulty - 1]" for a, v in levels],
        )
    rows = []
    for i, level in enumerate(LEVELS):
        values = [_literal(v[i]) for _, v in levels]
        cell = values[0] if len(values) == 1 else f"({', '.join(values)})"
        rows.append(f"{level}: {cell}")
    target = ", ".join(f"self.{a}" for a in attrs)
    if style.levels == "table":
        table = ["_LEVELS = {" + ", ".join(rows) + "}"]
        return table, [], [f"{target} = _LEVELS[self.difficulty]"]
    table = ["LEVELS = {" + ", ".join(rows) + "}"]
    return [], table, [f"{target} = self.LEVELS[self.difficulty]"]


def assemble(rng: random.Random, style: Style, spec: Spec) -> str:
    names = {
        "turn": style.turn,
        "done": style.done,
        "info": style.info_expr(),
        "bad": style.bad,
        **spec.names,
    }
    if style.parse == "function":
        parse = [f"text = {style.parse_name}(action)"]
    elif style.parse == "method":
        parse = [f"text = self.{style.parse_name}(action)"]
    else:
        parse = [
            f'm = re.search(r"{style.regex}", str(action))',
            "text = (m.group(1) if m else str(action)).strip()",
        ]
    guard = (
        [
            f"if self.{style.done}:",
            f'    return "{style.guard_text}", 0.0, True, False, {style.info_expr()}',
        ]
        if style.guard
        else []
    )
    blocks = {
        "parse": parse,
        "guard": guard,
        "end": [f"self.{style.done} = True"] if style.guard else [],
        "start": [f"self.{style.done} = False"] if style.guard else [],
        **spec.blocks,
    }

    module_tables, class_tables, init_levels = _level_lines(style, spec.levels)
    header = (
        f'"""{spec.description}\n\nskill: {spec.skill}\nhint: {spec.hint}\n'
        f'difficulty: 1-3\nturns: {spec.turns}\n"""'
    )
    imports = ["import random", "import re", *sorted(set(spec.imports))]
    module: list[str] = []
    if style.parse == "function":
        regex_name = rng.choice(["_BOXED", "_BOX", "BOXED"])
        module.append(f'{regex_name} = re.compile(r"{style.regex}")')
        module.append(
            f"def {style.parse_name}(action):\n"
            f"    m = {regex_name}.search(str(action))\n"
            f"    return (m.group(1) if m else str(action)).strip()"
        )
    module += [_fill(m, blocks, names) for m in spec.module]

    difficulty = (
        "self.difficulty = min(3, max(1, int(difficulty)))"
        if style.clamp
        else "self.difficulty = int(difficulty)"
    )
    init_extra = _fill("\n".join(spec.init), blocks, names).split("\n") if spec.init else []
    init = [
        f"def __init__(self, max_turns={style.max_turns}, difficulty=2):",
        "    self.max_turns = max_turns",
        f"    {difficulty}",
        *[f"    {line}" for line in init_levels],
        *[f"    {line}" for line in init_extra],
        *([f"    self.{style.done} = True"] if style.guard else []),
    ]
    methods = [_fill(m, blocks, names) for m in spec.methods]
    helpers = [_fill(h, blocks, names) for h in spec.helpers]
    extra = []
    if style.parse == "method":
        extra.append(
            f"def {style.parse_name}(self, action):\n"
            f'    m = re.search(r"{style.regex}", str(action))\n'
            f"    return m.group(1).strip() if m else str(action).strip()"
        )
    if style.info == "method":
        fields = [f'"turn": self.{style.turn}', *spec.info_fields]
        if rng.random() < 0.5:
            fields.append('"difficulty": self.difficulty')
        extra.append("def _info(self):\n    return {" + ", ".join(fields) + "}")
    reset_step, rest = methods[:2], methods[2:]
    body_methods = (
        ["\n".join(init), *extra, *helpers, *reset_step, *rest]
        if style.helpers_first
        else ["\n".join(init), *reset_step, *helpers, *rest, *extra]
    )
    class_lines = [f"class {spec.class_name}:"]
    if class_tables:
        class_lines.append(_indent("\n".join(class_tables)))
        class_lines.append("")
    class_text = "\n".join(class_lines) + "\n" + "\n\n".join(_indent(m) for m in body_methods)
    parts = [header, "\n".join(imports)]
    if module_tables:
        parts.append("\n".join(module_tables))
    top = "\n\n".join(parts)
    defs = "\n\n\n".join([*module, class_text])
    code = f"{top}\n\n\n{defs}\n"
    return re.sub(r"\n{4,}", "\n\n\n", code)


def boxed(expr: str) -> str:
    """Source of an f-string that boxes `expr`, e.g. f"\\boxed{{{x}}}"."""
    return 'f"\\\\boxed{{{' + expr + '}}}"'


def choose(rng: random.Random, *options: str) -> str:
    return rng.choice(options)
