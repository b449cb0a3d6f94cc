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

The compact form (`compact`, `compact_rendered`) uses the same placeholders for one scaffold
subclass (`QuestionEnv` / `GameEnv`) without a Style: its variation comes from `pick` (names),
`scale` (how a per-difficulty value is written) and each family's own variants.
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
    form: str = "full"
    """"full" (a complete file with its own reset/step) or "compact" (one scaffold subclass)."""


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


# --- compact form: one class on a scaffold (QuestionEnv / GameEnv) ----------------------------


def compact(
    class_name: str,
    base: str,
    description: str,
    parts: Sequence[str],
    names: Mapping[str, str] | None = None,
    blocks: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """A compact program: `class <class_name>(<base>):`, a one-line docstring, then `parts`.

    Each part is a class attribute line or a method, as text with the placeholders of the full
    form (`$name` from `names`, a line `@block` from `blocks`), dedented here and indented into
    the class; empty parts are left out. Methods are separated by one blank line (consecutive
    class attribute lines stay together). The file needs
    no imports: the runtime pre-fills `random`, `math`, `re`, `itertools`... and the scaffolds.
    """
    body: list[str] = []
    for part in parts:
        if not part.strip():
            continue
        text = _indent(_fill(part, blocks or {}, names or {}))
        if (
            body
            and not text.lstrip().startswith("def ")
            and not body[-1].lstrip().startswith("def ")
        ):
            body[-1] += "\n" + text  # class attributes stay together
        else:
            body.append(text)
    head = f'class {class_name}({base}):\n    """{description}"""'
    return "\n\n".join([head, *body]) + "\n"


def compact_rendered(
    rng: random.Random,
    *,
    skill: str,
    family: str,
    base: str,
    class_names: Sequence[str],
    descriptions: Sequence[str],
    hints: Sequence[str],
    parts: Sequence[str],
    names: Mapping[str, str] | None = None,
    blocks: Mapping[str, Sequence[str]] | None = None,
) -> Rendered:
    """Draw the class name, description and hint, then `compact(...)` as a compact `Rendered`.

    Two structural variants shared by the QuestionEnv families are drawn here: a `return $ask,
    <answer>` line (a `generate` returning its question) stays as it is or first binds the
    question to a local (`question = $ask`), and a question without its own `\\boxed` format
    may get an `instruction` class attribute (the scaffold's default instruction otherwise).
    """
    class_name = rng.choice(list(class_names))
    description = rng.choice(list(descriptions))
    hint = rng.choice(list(hints))
    local = rng.choice(["", "", "question", "prompt"])
    if local:
        parts = [_bind_question(part, local) for part in parts]
        blocks = {
            key: _bind_question("\n".join(lines), local).split("\n") if lines else []
            for key, lines in (blocks or {}).items()
        }
    instruction = rng.choice(["", "", "", *INSTRUCTIONS])
    text = "\n".join([*parts, *(names or {}).values()])
    if instruction and base == "QuestionEnv" and "boxed" not in text:
        parts = [f'instruction = "{instruction}"', *parts]
    code = compact(class_name, base, description, parts, names, blocks)
    return Rendered(code, hint, skill, family, form="compact")


INSTRUCTIONS = (
    "Put your final answer in \\\\boxed{}.",
    "End your reply with \\\\boxed{answer}.",
)
"""Instructions a compact QuestionEnv may set instead of the scaffold's default."""

_RETURN_ASK = re.compile(r"^([ \t]*)return \$ask, (.+)$", re.MULTILINE)


def _bind_question(text: str, local: str) -> str:
    return _RETURN_ASK.sub(lambda m: f"{m[1]}{local} = $ask\n{m[1]}return {local}, {m[2]}", text)


def pick(rng: random.Random, **options: Sequence[str]) -> dict[str, str]:
    """One drawn value per keyword (in keyword order), e.g. identifier names for a template."""
    return {key: rng.choice(list(values)) for key, values in options.items()}


def scale(rng: random.Random, values: tuple[int, int, int]) -> str:
    """Source of an expression worth `values[self.difficulty - 1]`, in one of several forms."""
    a, b, c = values
    forms = [f"({a}, {b}, {c})[self.difficulty - 1]", f"[{a}, {b}, {c}][self.difficulty - 1]"]
    step = b - a
    if step > 0 and c - b == step:
        start = a - step
        times = "self.difficulty" if step == 1 else f"{step} * self.difficulty"
        forms.append(
            times if start == 0 else f"{times} + {start}" if start > 0 else f"{times} - {-start}"
        )
    return rng.choice(forms)
