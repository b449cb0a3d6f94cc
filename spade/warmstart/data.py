"""Warm-start data (`spade bootstrap`): supervised examples of both roles, in the loop's formats.

    from spade.warmstart.data import warm_start_examples
    examples = warm_start_examples(seed=0, form="compact")   # list[Example]

Self-play cannot start from zero reward: a model that never writes a valid environment or wins an
episode gives the loop nothing to learn from. The default data (`warm_start_examples`) is:

- Designer turns: the Designer prompt the loop renders (skill, difficulty word, a random grounding
  document, the embedded model's prompt budget, the recipe's form) -> the code and hint of an
  environment rendered from the parametric families in `spade.templates` (in the compact form, a
  short `QuestionEnv` / `GameEnv` subclass; in the full form the whole file, plus the bundled
  seeds), and in the compact form also one-question programs of `spade.templates.mini`. The
  families of `spade.templates.eval_families()` and `spade.templates.mini.MINI_EVAL_FAMILIES` are
  left out: their renders are in the evaluation set (`spade.evals.sets.eval_programs`) with one
  render of each trained mini family (other parameters, other episodes).
- Agent turns: an observation (with the conversation so far) -> the next reply of `solution()`,
  recorded by replaying the solutions of template programs and of the seeds in a child process
  (`spade.warmstart.replay`), at several difficulties.

The prompt formats belong to spade.prompts; they enter here as functions (`ExampleFormat`,
default `prompts_format()`), and the whole data builder can be replaced (`bootstrap(examples=)`).
"""

from __future__ import annotations

import hashlib
import os
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from spade.backends.base import Message, Role
from spade.types import COMPACT, FULL, GAME, Form
from spade.warmstart.replay import replay_many

if TYPE_CHECKING:
    from spade.templates import Rendered


@dataclass(frozen=True)
class Example:
    """One supervised example: continue `messages` with `target` (the only trained tokens)."""

    messages: tuple[Message, ...]
    target: str
    role: Role


class DesignerPromptFn(Protocol):
    def __call__(
        self, skill: str, difficulty: int, document: Mapping[str, Any] | None = None
    ) -> list[Message]: ...


@dataclass(frozen=True)
class ExampleFormat:
    """How examples are worded (default: the prompts module's renderers, `prompts_format()`)."""

    designer_prompt: DesignerPromptFn
    """(skill, difficulty[, grounding document]) -> the Designer conversation."""
    designer_reply: Callable[[str, str], str]
    """(code, hint) -> the Designer's reply."""
    agent_first: Callable[[str, str, list[dict[str, Any]]], list[Message]]
    """(first observation, skill, tool schemas) -> the Agent conversation."""


def _default_designer_prompt(
    skill: str, difficulty: int, document: Mapping[str, Any] | None = None
) -> list[Message]:
    words = {1: "easy", 2: "medium", 3: "hard"}
    return [
        {
            "role": "user",
            "content": (
                f"Design a training environment for the skill {skill} "
                f"at difficulty {words.get(difficulty, difficulty)}. "
                "Write one Python class whose name ends in Env, with "
                "reset(seed=None) -> (observation, info) and "
                "step(action) -> (observation, reward, terminated, truncated, info), "
                "in a ```python block, "
                "then a line starting with HINT:."
            ),
        }
    ]


PLAIN_FORMAT = ExampleFormat(
    designer_prompt=_default_designer_prompt,
    designer_reply=lambda code, hint: f"```python\n{code.rstrip()}\n```\nHINT: {hint}",
    agent_first=lambda observation, skill, tools: [{"role": "user", "content": observation}],
)
"""A minimal wording that needs nothing else from the package."""


def prompts_format(budget_chars: int | None = None, form: Form = COMPACT) -> ExampleFormat:
    """The wording the self-play loop uses (spade.prompts): the embedded model's prompt
    budget and the Designer form of the recipe (`spade.prompts.FORMS`)."""
    from spade import prompts

    budget = prompts.TINY_BUDGET_CHARS if budget_chars is None else budget_chars

    def designer_prompt(
        skill: str, difficulty: int, document: Mapping[str, Any] | None = None
    ) -> list[Message]:
        # what spade.selfplay.designer.design renders (no exemplars: the warm start has no memory
        # yet)
        return prompts.designer_messages(
            skill, prompts.difficulty_word(difficulty), document, budget_chars=budget, form=form
        )

    return ExampleFormat(
        designer_prompt=designer_prompt,
        designer_reply=prompts.designer_reply,
        agent_first=lambda observation, skill, tools: prompts.agent_messages(
            observation, prompts.kind_of_skill(skill), tools
        ),
    )


def with_default_difficulty(code: str, difficulty: int) -> str:
    """The program with its constructor's `difficulty=` default set to `difficulty`."""
    return re.sub(
        r"(def __init__\([^)]*\bdifficulty\s*=\s*)\d+", rf"\g<1>{difficulty}", code, count=1
    )


def _agent_examples(
    fmt: ExampleFormat, skill: str, episodes: Sequence[Mapping[str, Any]], max_chars: int
) -> list[Example]:
    """One example per turn of each won episode, while the conversation fits in `max_chars`."""
    examples: list[Example] = []
    for episode in episodes:
        if not episode["won"]:
            continue
        messages: list[Message] = []
        for i, (observation, reply) in enumerate(episode["turns"]):
            messages += (
                fmt.agent_first(observation, skill, episode.get("tools", []))
                if i == 0
                else [{"role": "user", "content": observation}]
            )
            if sum(len(str(m["content"])) for m in messages) + len(reply) > max_chars:
                break
            examples.append(Example(tuple(messages), reply, "agent"))
            messages.append({"role": "assistant", "content": reply})
    return examples


def _documents(documents: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    if documents is not None:
        return list(documents)
    from spade.envs import bundled

    return list(bundled.grounding_documents())


def seed_examples(
    fmt: ExampleFormat | None = None,
    episodes_per_level: int = 4,
    seed: int = 0,
    documents: Sequence[Mapping[str, Any]] | None = (),
    agent_max_chars: int = 6000,
) -> list[Example]:
    """Designer and Agent examples from the bundled seed environments (winning replays only).

    Each Designer prompt shows a grounding document drawn from `documents` (None: the bundled
    corpus; empty: none), as the Designer stage does.
    """
    from concurrent.futures import ThreadPoolExecutor

    from spade.envs.bundled import seed_programs

    fmt = fmt or prompts_format()
    docs = _documents(documents)
    programs = seed_programs()
    rng = random.Random(seed)
    jobs = [
        [
            (level, rng.randrange(2**31))
            for level in (p.difficulty_levels() or (2,))
            for _ in range(episodes_per_level)
        ]
        for p in programs
    ]
    # one child process per core, each playing its share of the programs (dealt round-robin,
    # so the few slow seeds spread out); a child per program spent more starting than playing
    children = max(1, min(len(programs), os.cpu_count() or 1))
    shares = [list(range(i, len(programs), children)) for i in range(children)]
    with ThreadPoolExecutor(max_workers=children) as pool:
        played = list(
            pool.map(
                lambda share: replay_many([(programs[i].code, jobs[i]) for i in share]), shares
            )
        )
    replays: list[list[dict[str, Any]]] = [[] for _ in programs]
    for share, results in zip(shares, played):
        for i, result in zip(share, results):
            replays[i] = result
    examples: list[Example] = []
    for program, episodes in zip(programs, replays):
        for level in program.difficulty_levels() or (2,):
            code = with_default_difficulty(program.code, level)
            document = rng.choice(docs) if docs else None
            examples.append(
                Example(
                    tuple(fmt.designer_prompt(program.skill, level, document)),
                    fmt.designer_reply(code, program.hint),
                    "designer",
                )
            )
        examples += _agent_examples(fmt, program.skill, episodes, agent_max_chars)
    return examples


LEVEL_WEIGHTS = (1, 2, 1)
"""How often template programs are shown at difficulty 1, 2, 3 (the loop asks for "medium")."""


def designer_programs(
    count: int, seed: int, form: Form, families: Sequence[str], mini: int = 0
) -> list[Rendered]:
    """The programs a warm start shows as Designer turns, in render order: `count` renders of
    the template `families` in `form`, then `mini` one-question programs."""
    from spade import templates

    programs = list(templates.render_many(count, seed=seed, form=form, families=families))
    if mini:
        from spade.templates.mini import render_mini_many

        programs += render_mini_many(mini, seed=seed)
    return programs


FULL_COUNT = 3000
"""The full-form warm start's Designer turns: template programs (and the seeds)."""


def template_examples(
    fmt: ExampleFormat | None = None,
    count: int = FULL_COUNT,
    seed: int = 0,
    documents: Sequence[Mapping[str, Any]] | None = None,
    agent_programs: int = 120,
    agent_max_chars: int = 6000,
    form: Form = FULL,
    exclude: Sequence[str] = (),
    mini: int = 0,
) -> list[Example]:
    """Designer examples for `count` programs rendered from `spade.templates` in `form` (and
    `mini` one-question programs of `spade.templates.mini`, its evaluation families left out),
    and Agent examples from the solutions of `agent_programs` of them (one episode each, at a
    drawn difficulty), leaving out the families in `exclude`.

    Each program is shown under its own Designer prompt: a difficulty drawn with `LEVEL_WEIGHTS`
    (a full program's constructor default set to it) and a grounding document drawn from
    `documents` (None: the bundled corpus), as the Designer stage draws one per attempt.
    """
    from spade import templates

    fmt = fmt or prompts_format(form=form)
    docs = _documents(documents)
    rng = random.Random(seed)
    families = [f for f in sorted(templates.FAMILIES) if f not in set(exclude)]
    programs = designer_programs(count, seed, form, families, mini)
    if mini:
        random.Random(seed + 1).shuffle(programs)
    examples: list[Example] = []
    for program in programs:
        level = rng.choices((1, 2, 3), weights=LEVEL_WEIGHTS)[0]
        document = rng.choice(docs) if docs else None
        examples.append(
            Example(
                tuple(fmt.designer_prompt(program.skill, level, document)),
                fmt.designer_reply(with_default_difficulty(program.code, level), program.hint),
                "designer",
            )
        )
    played = programs[:: max(1, len(programs) // max(agent_programs, 1))][:agent_programs]
    runs = [[(rng.choice((1, 2, 3)), rng.randrange(2**31))] for _ in played]
    replays = replay_many([(p.code, r) for p, r in zip(played, runs)])
    for program, episodes in zip(played, replays):
        examples += _agent_examples(fmt, program.skill, episodes, agent_max_chars)
    return examples


COMPACT_FAMILIES = (
    "arithmetic",
    "assignment",
    "broken_chain",
    "clue_number",
    "grid_rule",
    "path_trace",
)
"""The template families of the compact warm start: the shortest compact family of each game
skill, the evaluation families left out. Six families instead of twelve lets five minutes of a
2-core CPU show the small model each one about three times as often; measured in
docs/warmstart.md (admitted designs and final NLL against all twelve)."""


COMPACT_COUNT, COMPACT_MINI = 500, 1000
"""The compact warm start's Designer turns: template programs and mini programs."""

QUESTION_COUNT = 4000
"""The compact warm start's one-question Agent turns (`question_examples`)."""


def question_examples(count: int = QUESTION_COUNT, seed: int = 0) -> list[Example]:
    """`count` Agent turns on questions of the trained families of `spade.templates.questions`: the
    question in a trained phrasing with a trained answer instruction (the reference's half of
    the time), after a newline or a space, and the worked reply ("7 + 7 = 14, so
    \\boxed{14}"), at difficulty 1, 2 or 3 (weights 3:2:1: the loop and the evaluation play
    level 1). Held-out families, phrasings and instructions never appear."""
    from spade import prompts
    from spade.templates import questions

    rng = random.Random(f"questions/{seed}")
    families = sorted(questions.TRAIN_FAMILIES)
    others = questions.TRAIN_INSTRUCTIONS[1:]
    examples = []
    for _ in range(count):
        family = rng.choice(families)
        question = questions.draw(family, rng, rng.choices((1, 2, 3), weights=(3, 2, 1))[0])
        instruction = questions.REFERENCE_INSTRUCTION if rng.random() < 0.5 else rng.choice(others)
        text = question.text + rng.choice(("\n", " ")) + instruction
        messages = prompts.agent_messages(text, GAME)
        examples.append(Example(tuple(messages), questions.reply(question), "agent"))
    return examples


def training_families(form: Form = COMPACT, families: Sequence[str] | None = None) -> list[str]:
    """The template families a warm start of `form` trains on: `families` (None:
    `COMPACT_FAMILIES` for the compact form, every family for the full form), never an
    evaluation family."""
    from spade import templates

    if families is None and form == COMPACT:
        families = COMPACT_FAMILIES
    held_out = set(templates.eval_families())
    return [
        f
        for f in sorted(templates.FAMILIES)
        if f not in held_out and (families is None or f in families)
    ]


def warm_start_examples(
    seed: int = 0,
    form: Form = COMPACT,
    families: Sequence[str] | None = None,
    count: int = COMPACT_COUNT,
    mini: int = COMPACT_MINI,
) -> list[Example]:
    """The default warm-start data for a recipe's Designer `form` (see the module docstring):
    compact (games only, like the recipe that uses it): 500 compact template programs and 1,000
    mini programs as Designer turns, Agent turns from 800 of them, from the game seeds and 3,000
    one-question turns with a worked step (`question_examples`); full:
    3,000 full template programs and the seeds as Designer turns, Agent turns from 120 of them
    and the seeds (`count` and `mini` apply to the compact form only). The evaluation families
    are left out of both. `families` restricts the template families (None: `COMPACT_FAMILIES`
    for the compact form, every family but the evaluation ones for the full form)."""
    from spade import prompts, templates

    trained = training_families(form, families)
    held_out = tuple(f for f in sorted(templates.FAMILIES) if f not in trained)
    if form == COMPACT:
        fmt = prompts_format(form=COMPACT)
        designer = template_examples(
            fmt,
            count=count,
            seed=seed,
            agent_programs=800,
            form=COMPACT,
            exclude=held_out,
            mini=mini,
        )
        seeds = seed_examples(fmt, seed=seed, documents=None)
        game = prompts.GAME_AGENT_SYSTEM
        return (
            designer
            + [e for e in seeds if e.role == "agent" and e.messages[0]["content"] == game]
            + question_examples(seed=seed)
        )
    fmt = prompts_format(form="full")
    return template_examples(fmt, seed=seed, form="full", exclude=held_out) + seed_examples(
        fmt, seed=seed, documents=None
    )


def source_fingerprint() -> str:
    """Hash of everything `warm_start_examples` reads: a cache key that changes with its data."""
    root = Path(__file__).resolve().parents[1]  # spade/
    h = hashlib.sha256()
    files = [
        *sorted((root / "templates").glob("*.py")),  # the question families too (questions.py)
        *sorted((root / "seeds").rglob("*.py")),
        *sorted((root / "data").glob("*.jsonl")),
        root / "prompts.py",
        root / "sandbox" / "scaffolds.py",
        root / "sandbox" / "runtime.py",
        Path(__file__).resolve(),
        Path(__file__).resolve().with_name("replay.py"),
    ]
    for path in files:
        h.update(str(path.relative_to(root)).encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def training_programs(
    seed: int = 0,
    form: Form = COMPACT,
    families: Sequence[str] | None = None,
    mini: int | None = None,
    count: int | None = None,
) -> list[str]:
    """The code of the Designer targets of the default warm start (to spot memorised copies);
    `families`, `mini` and `count` as in `warm_start_examples` (None: its default)."""
    compact = form == COMPACT
    count = count if count is not None else COMPACT_COUNT if compact else FULL_COUNT
    mini = mini if mini is not None else COMPACT_MINI if compact else 0
    programs = designer_programs(count, seed, form, training_families(form, families), mini)
    return [r.code for r in programs]
