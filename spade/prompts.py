"""Prompt text and small pure render functions: the Designer, its optional hint call, the Agent.

Every function here is pure and deterministic: the same arguments give the same messages, character
for character. That matters beyond tidiness: the embedded model is warm-started on exactly
these renderings (designer prompt -> seed code + hint), so any change of wording is a shift of its
input distribution.

- The environment contract the Designer sees is quoted from `docs/environments.md` in fragments
  (`CONTRACT_*`); `tests/test_prompts.py` checks that every fragment still appears in that
  page, so the page stays the one source of truth.
- The Designer's reply format (`REPLY_FORMAT`) and the prompt layout are documented once in
  `docs/designer.md` (a test checks the doc quotes `REPLY_FORMAT` verbatim).
- Small contexts: `designer_prompt(..., budget_chars=N)` keeps the characters of all message
  contents within N. It switches to a compact contract, drops exemplars that do not fit (whole or
  not at all: half a program teaches broken code) and truncates the grounding document to what is
  left. With `budget_chars=None` (real models) it renders the paper's prompt: the document up to
  6,000 words, up to 2 exemplars and 1 negative example.
- A run's Designer prompts differ only in skill, document, exemplars and negative example: the
  rest (difficulty word, budget, form, hint in the reply or in a call of its own) is one
  `PromptSettings`, built once from the config (`PromptSettings.of`).

One module on purpose, over the usual ~450 lines (a third of it the contract quoted from
docs/environments.md): it is all the wording the embedded model is warm-started on, hashed as one
file into the warm start's cache key (`spade.warmstart.data.source_fingerprint`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from spade.backends.base import Message
from spade.types import COMPACT, FULL, GAME, TOOL, TOOL_SKILLS, EnvKind, Form, Program

if TYPE_CHECKING:
    from spade.config import DesignConfig

MAX_HINT_CHARS = 600
"""Longest hint kept (SPADE.md section 3, hint gates)."""
MAX_DOCUMENT_WORDS = 6000
"""The paper truncates each grounding document to 6,000 words."""
MAX_EXEMPLARS = 2
"""The paper shows up to 2 exemplars from the environment memory."""
DOCUMENT_RESERVE_CHARS = 1000
"""Under a budget, an exemplar is only added if this much (or the whole document) still fits."""
MIN_DOCUMENT_CHARS = 200
"""Under a budget, a document that would be cut below this many characters is left out."""
TINY_BUDGET_CHARS = 1500
"""A prompt budget that suits the embedded model (~400 prompt tokens, the rest is the program)."""

DIFFICULTY_WORDS = {1: "easy", 2: "medium", 3: "hard"}


def difficulty_word(level: int) -> str:
    """The difficulty word of a seed difficulty level (1 = easy); other levels as `level N`."""
    return DIFFICULTY_WORDS.get(level, f"level {level}")


def kind_of_skill(skill: str) -> EnvKind:
    """The kind of environment a skill calls for: `TOOL` for the tool-use skills, else `GAME`."""
    return TOOL if skill in TOOL_SKILLS else GAME


# --- the contract, quoted from docs/environments.md ---------------------------------------------
# Each fragment appears verbatim in that page once `**` is removed and whitespace collapsed.

CONTRACT: tuple[tuple[str, bool], ...] = (
    ("An environment is one self-contained Python source file.", False),
    ("The environment is the first top-level class whose name ends in `Env`", True),
    ("The constructor works with no arguments and accepts `max_turns=` as a keyword.", False),
    ("`reset(seed=None) -> (observation: str, info: dict)`. Same seed, same observation", True),
    (
        "`step(action: str) -> (observation: str, reward: float, terminated: bool, truncated: "
        "bool, info: dict)`",
        True,
    ),
    ("`terminated`: the task ended (solved or failed). `truncated`: turn cap.", False),
    (
        "Optional `solution() -> list[str]`: called right after `reset(seed)`, returns the agent "
        "replies that win when replayed in order",
        False,
    ),
    ("It must not change the environment's state.", False),
    (
        "Rewards are finite numbers in [-10, 10]. Observations are strings of at most 20,000 "
        "characters; `info` is a JSON-serialisable dict.",
        False,
    ),
    (
        "The episode return is the last reward clipped to [-1, 1] if the episode terminated, "
        "else 0 (outcome only). A win is return > 0.",
        False,
    ),
    (
        "The runtime caps every episode at `max_turns` steps (default 25): an episode still "
        "running then is truncated (return 0).",
        False,
    ),
    (
        "Names available without import (the reference's pre-filled namespace): `math random re "
        "json itertools collections functools string copy heapq operator statistics`",
        False,
    ),
    ("Other standard-library modules may be imported normally.", False),
    ("Keep randomness local: `rng = random.Random(seed)`, never the global `random` state.", False),
    ("A file starts with a docstring. Its first line is a one-line description", False),
)
"""The contract's rules as (fragment, essential). The compact contract keeps the essential ones."""

CONTRACT_GAME: tuple[tuple[str, bool], ...] = (
    (
        "The action is the content of its first `\\boxed{...}`, re-wrapped as "
        "`\\boxed{content}` before `step`",
        True,
    ),
    (
        "So `step` receives for example `\\boxed{7}` or `\\boxed{up}` and parses the content "
        "itself (strip whitespace, be case-insensitive where that is natural).",
        False,
    ),
    ("Invalid actions get an informative observation, not an exception.", False),
)
CONTRACT_TOOL: tuple[tuple[str, bool], ...] = (
    ("Tool-use environments subclass `ToolUseBaseEnv` (available without import).", True),
    (
        "`__init__(max_turns=10)` sets `turn_count = 0`, `_tools = {}`, `_state = {}`, "
        "`_call_history = []`, `_expected_answer = None`, `_user_messages = []`, "
        "`_message_criteria = []`, `_current_msg = 0`, then calls `self.reset()`.",
        False,
    ),
    (
        'The subclass\'s `reset(seed)` fills `_state`, `_tools` (name -> `{"description": str, '
        '"parameters": JSON schema}`) and `_expected_answer`, and returns `(observation, {})`.',
        False,
    ),
    (
        "One method `tool_<name>(**kwargs) -> str` per tool; parameter names match the schema.",
        True,
    ),
    (
        'The agent calls tools with `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`',
        False,
    ),
    (
        "an `<answer>` matching `_expected_answer` (case-insensitive exact match, or numeric "
        'within 0.01 after stripping `$` and `,`) -> `("Correct!", 1.0, terminated=True)`',
        False,
    ),
    (
        "Multi-turn tool tasks set `_user_messages` (3-5 instructions), `_message_criteria` (one "
        'predicate over `_state` per instruction), `_expected_answer = "done"`, return only the '
        "first instruction from `reset`, and append the result of `self._advance_if_done()` to "
        "every tool result",
        False,
    ),
)

CONTRACT_COMPACT: tuple[tuple[str, bool], ...] = (
    (
        "Write a short class that subclasses `QuestionEnv` or `GameEnv`, with a one-line "
        "docstring.",
        True,
    ),
    (
        "`QuestionEnv`: write `generate(self, rng)` returning `(question, answer)`. `rng` is "
        "`random.Random(seed)`; `self.difficulty` is 1 (easy) to 3 (hard).",
        True,
    ),
    (
        "`GameEnv`: write `start(self, rng)` returning the first observation, and "
        "`move(self, action)` returning `(feedback, reward, done)`; `action` is the text inside "
        "the agent's `\\boxed{}`.",
        True,
    ),
    ("Optional `solve(self)` returns the winning moves.", True),
)
"""The compact form's rules (docs/environments.md, "Compact games"): what the Designer writes
when it subclasses a scaffold of `spade/sandbox/scaffolds.py`."""

COMPACT_EXAMPLE = '''class TimesTableEnv(QuestionEnv):
    """Multiply two numbers."""
    def generate(self, rng):
        a, b = rng.randint(2, 3 + 3 * self.difficulty), rng.randint(2, 9)
        return f"What is {a} times {b}?", a * b'''
"""The compact example of the Designer prompt, also quoted in docs/environments.md."""

FORMS: tuple[Form, ...] = (FULL, COMPACT)
"""How the Designer is asked to write a game: the whole contract, or a scaffold subclass."""

ALL_CONTRACT_FRAGMENTS = tuple(
    text for text, _ in CONTRACT + CONTRACT_GAME + CONTRACT_TOOL + CONTRACT_COMPACT
)

# --- the Designer -------------------------------------------------------------------------------

REPLY_FORMAT = (
    "Reply with exactly one ```python code block holding the whole environment file, followed by "
    "one line `HINT: <hint>` (at most 600 characters, no code fence)."
)
"""The Designer's reply format; docs/designer.md quotes it verbatim."""
REPLY_FORMAT_CODE_ONLY = (
    "Reply with exactly one ```python code block holding the whole environment file."
)
"""The reply format when the hint is asked for in a separate call (`with_hint=False`)."""

DESIGNER_ROLE = (
    "You are the Environment Designer. You write a training environment for a reasoning agent: "
    "a Python file the agent plays in text, turn by turn, plus a privileged hint. Make it hard "
    "but solvable: a good hint should make the difference. The hint may point at the key insight "
    "but must not give the answer."
)
DESIGNER_ROLE_COMPACT = (
    "You are the Environment Designer: write a training environment (Python) and a hint."
)


def _bullets(fragments: Sequence[str]) -> str:
    return "\n".join(f"- {f}" if f.endswith(".") else f"- {f}." for f in fragments)


def designer_system(kind: EnvKind = GAME, *, compact: bool = False, form: Form = FULL) -> str:
    """The Designer's system message: its role and the contract for `kind` (`GAME` or `TOOL`).

    `form=COMPACT` (games only; tool use has no compact base) asks for a scaffold subclass:
    the compact role, `CONTRACT_COMPACT` and `COMPACT_EXAMPLE`. `compact=True` keeps only the
    essential rules of the full contract.
    """
    if kind not in (GAME, TOOL):
        raise ValueError(f"kind must be 'game' or 'tool', got {kind!r}")
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    if form == COMPACT and kind == GAME:
        bullets = _bullets([text for text, _ in CONTRACT_COMPACT])
        example = f"```python\n{COMPACT_EXAMPLE}\n```"
        return f"{DESIGNER_ROLE_COMPACT}\n\nThe environment:\n{bullets}\n\nExample:\n{example}"
    rules = CONTRACT + (CONTRACT_GAME if kind == GAME else CONTRACT_TOOL)
    kept = [text for text, essential in rules if essential or not compact]
    role = DESIGNER_ROLE_COMPACT if compact else DESIGNER_ROLE
    return f"{role}\n\nThe environment contract:\n{_bullets(kept)}"


DESIGNER_SYSTEM = designer_system(GAME)
"""The full system message for game skills (the tool variant: `designer_system("tool")`)."""

GROUNDING_LINE = "Ground the interaction in a concept of this document without referencing it."


def designer_reply(code: str, hint: str | None) -> str:
    """A reply in the Designer's format (warm-start targets, exemplars); no HINT line if None."""
    block = f"```python\n{code.strip(chr(10))}\n```"
    return block if hint is None else f"{block}\nHINT: {hint.strip()}"


def truncate_words(text: str, max_words: int) -> str:
    """`text` up to the end of its `max_words`-th word (original spacing kept)."""
    for count, match in enumerate(re.finditer(r"\S+", text), 1):
        if count == max_words:
            return text[: match.end()]
    return text


def _cut(text: str, max_chars: int) -> str:
    """`text` in at most `max_chars` characters, cut at a word boundary and marked with `...`."""
    if len(text) <= max_chars:
        return text
    head = text[: max(0, max_chars - 4)]
    space = head.rfind(" ")
    return (head[:space] if space > 0 else head).rstrip() + " ..."


def _document_section(document: Mapping[str, Any], max_chars: int | None) -> str | None:
    title = str(document.get("title", "")).strip()
    head = f"{GROUNDING_LINE}\nDocument: {title}\n" if title else f"{GROUNDING_LINE}\n"
    text = truncate_words(str(document.get("text", "")).strip(), MAX_DOCUMENT_WORDS)
    if not text:
        return None
    if max_chars is not None:
        room = max_chars - len(head)
        if room < min(MIN_DOCUMENT_CHARS, len(text)):
            return None
        text = _cut(text, room)
    return head + text


def _exemplar_section(program: Program, number: int, with_hint: bool) -> str:
    label = f"Example {number} of a good environment ({program.skill or 'any skill'}):"
    return f"{label}\n{designer_reply(program.code, program.hint if with_hint else None)}"


def describe(program: Program, max_chars: int = 300) -> str:
    """A one-line name for a program: its description, else its class, else its id."""
    if program.description:
        return _cut(program.description, max_chars)
    match = re.search(r"^class\s+(\w+Env)\b", program.code, re.MULTILINE)
    return match.group(1) if match else f"environment {program.env_id[:12]}"


def _negative_section(negative: tuple[Program, str]) -> str:
    program, reason = negative
    return f"Do not write another environment like this one, which was {reason}: " + describe(
        program
    )


@dataclass(frozen=True)
class PromptSettings:
    """How a run renders its Designer prompts, whatever the skill: built once from the config
    (`PromptSettings.of`) and passed down through admission and the Designer to
    `designer_prompt`."""

    difficulty_word: str = "medium"
    """The difficulty word of the task line ("Write a new medium environment ...")."""
    budget_chars: int | None = None
    """Cap on the characters of all message contents; None: the paper's full prompt."""
    form: Form = FULL
    """How games are asked for (`FORMS`); tool-use skills always get the full contract."""
    separate_hint: bool = False
    """Ask for the hint in a call of its own (the paper's mode): the reply format asks for the
    code only."""
    max_exemplars: int = MAX_EXEMPLARS
    """Exemplars shown at most (fewer when they do not fit the budget)."""

    @property
    def with_hint(self) -> bool:
        """Whether the reply format asks for the `HINT:` line after the code."""
        return not self.separate_hint

    @classmethod
    def of(cls, design: DesignConfig) -> PromptSettings:
        """The settings of a run's `DesignConfig`."""
        return cls(
            difficulty_word=design.difficulty_word,
            budget_chars=design.prompt_budget_chars,
            form=design.form,
            separate_hint=design.separate_hint,
        )


PAPER_PROMPT = PromptSettings()
"""The paper's prompt: no budget, the full contract, the hint on the reply's last line."""


@dataclass(frozen=True)
class DesignerPrompt:
    """A rendered Designer prompt and what went into it (for provenance)."""

    messages: tuple[Message, ...]
    exemplars: tuple[Program, ...]
    """The exemplars actually shown (some may have been dropped to fit the budget)."""
    document_title: str | None
    """The grounding document's title if (part of) it was shown, else None."""
    compact: bool
    """True when a compact system message was used: the compact form, or the essential rules of
    the full contract to fit the budget."""

    @property
    def chars(self) -> int:
        return sum(len(str(m["content"])) for m in self.messages)


def designer_prompt(
    skill: str,
    settings: PromptSettings = PAPER_PROMPT,
    document: Mapping[str, Any] | None = None,
    exemplars: Sequence[Program] = (),
    negative: tuple[Program, str] | None = None,
    *,
    kind: EnvKind | None = None,
) -> DesignerPrompt:
    """Render the Designer prompt (system + user) for one environment; see docs/designer.md.

    `kind` defaults to the skill's kind. Under `settings.budget_chars` parts are kept in this
    priority: the fixed part (full contract, or the compact one if the full one does not fit),
    the negative example, the exemplars in order (each whole, and only if
    `DOCUMENT_RESERVE_CHARS` or the whole document still fits after it), then the document cut
    to what is left. The fixed part is never cut, so a budget below it gives a prompt longer than
    the budget. `settings.form` is the game form (see `designer_system`); the compact form has
    one fixed part, never shortened.
    """
    kind = kind or kind_of_skill(skill)
    budget_chars = settings.budget_chars
    task = f"Write a new {settings.difficulty_word} environment that trains the skill: {skill}."
    reply_format = REPLY_FORMAT if settings.with_hint else REPLY_FORMAT_CODE_ONLY
    system = designer_system(kind, form=settings.form)
    compact = settings.form == COMPACT and kind == GAME

    def fixed_chars(system_text: str) -> int:
        return len(system_text) + len(task) + 2 + len(reply_format)

    if not compact and budget_chars is not None and fixed_chars(system) > budget_chars:
        system, compact = designer_system(kind, compact=True), True
    left = None if budget_chars is None else budget_chars - fixed_chars(system)

    def fits(section: str, reserve: int = 0) -> bool:
        return left is None or len(section) + 2 + reserve <= left

    negative_text = None if negative is None else _negative_section(negative)
    if negative_text is not None and fits(negative_text):
        left = None if left is None else left - len(negative_text) - 2
    elif negative_text is not None:
        negative_text = None

    full_document = None if document is None else _document_section(document, None)
    reserve = 0 if full_document is None else min(len(full_document) + 2, DOCUMENT_RESERVE_CHARS)
    shown: list[Program] = []
    exemplar_texts: list[str] = []
    for program in exemplars[: settings.max_exemplars]:
        text = _exemplar_section(program, len(shown) + 1, settings.with_hint)
        if fits(text, reserve):
            shown.append(program)
            exemplar_texts.append(text)
            left = None if left is None else left - len(text) - 2

    document_text = None
    if document is not None:
        document_text = _document_section(document, None if left is None else left - 2)
    title = None
    if document is not None and document_text is not None:
        title = str(document.get("title", "")).strip()

    sections = [task]
    sections += [document_text] if document_text else []
    sections += exemplar_texts
    sections += [negative_text] if negative_text else []
    sections.append(reply_format)
    messages = (
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(sections)},
    )
    return DesignerPrompt(messages, tuple(shown), title, compact)


def designer_messages(
    skill: str,
    difficulty_word: str = "medium",
    document: Mapping[str, Any] | None = None,
    exemplars: Sequence[Program] = (),
    negative: tuple[Program, str] | None = None,
    budget_chars: int | None = None,
    *,
    kind: EnvKind | None = None,
    with_hint: bool = True,
    form: Form = FULL,
) -> list[Message]:
    """The messages of `designer_prompt`, its settings given one by one (the warm start's
    renderings and one-off prompts; `designer_system` refuses a `form` not in `FORMS`)."""
    settings = PromptSettings(
        difficulty_word, budget_chars, cast(Form, form), separate_hint=not with_hint
    )
    return list(designer_prompt(skill, settings, document, exemplars, negative, kind=kind).messages)


# --- the separate hint call (paper mode) --------------------------------------------------------

HINT_SYSTEM = (
    "You write the privileged hint for a training environment. The player sees only the "
    "environment's observations; the hint is appended to the first one. Point at the key insight "
    "or strategy without giving the answer."
)
HINT_REPLY_FORMAT = "Reply with one line `HINT: <hint>` (at most 600 characters, no code fence)."


def hint_messages(code: str) -> list[Message]:
    """The hint call: the policy reads an environment's code and writes its hint."""
    user = f"The environment:\n\n```python\n{code.strip(chr(10))}\n```\n\n{HINT_REPLY_FORMAT}"
    return [{"role": "system", "content": HINT_SYSTEM}, {"role": "user", "content": user}]


# --- the Agent ----------------------------------------------------------------------------------

GAME_AGENT_SYSTEM = (
    "You are playing a text game. Read each observation, think briefly, then give your move as "
    "\\boxed{move}. Only the first \\boxed{} in your reply counts."
)
TOOL_AGENT_SYSTEM = (
    "You solve a task with tools. Call a tool with "
    '<tool_call>{"name": ..., "arguments": {...}}</tool_call> (several calls per reply are '
    "allowed). When you are done, reply with <answer>...</answer>."
)


def agent_system(kind: str, tools: Sequence[Mapping[str, Any]] = ()) -> str:
    """The Agent's system message; for tools it lists the OpenAI function schemas, one a line."""
    if kind == GAME:
        return GAME_AGENT_SYSTEM
    if kind == TOOL:
        schemas = "\n".join(json.dumps(dict(t), ensure_ascii=False) for t in tools)
        return f"{TOOL_AGENT_SYSTEM}\n\nTools:\n{schemas}" if schemas else TOOL_AGENT_SYSTEM
    raise ValueError(f"kind must be 'game' or 'tool', got {kind!r}")


def hinted_observation(observation: str, hint: str | None) -> str:
    """The first observation as the Agent sees it: `"{observation}\\n\\nHINT: {hint}"` (SPADE.md).

    None or an empty hint means a plain play: the observation unchanged.
    """
    return f"{observation}\n\nHINT: {hint}" if hint else observation


def agent_messages(
    observation: str, kind: str, tools: Sequence[Mapping[str, Any]] = (), hint: str | None = None
) -> list[Message]:
    """The Agent's first-turn messages (system + first observation, hinted or not)."""
    return [
        {"role": "system", "content": agent_system(kind, tools)},
        {"role": "user", "content": hinted_observation(observation, hint)},
    ]


def observation_message(text: str) -> Message:
    """A later turn's observation."""
    return {"role": "user", "content": text}
