"""The paired evaluation sets: one-question environments played once each, before and after.

    from spade.evals.sets import near_set, far_set, near_subset
    near = near_set()                       # 280 items: `near:add/0` ... `near:word_length/9`
    far = far_set()                         # 112 held-out items + 40 reasoning-gym level-0 items
    near.content_hash, len(near.programs), far.preload

Two sets, both made of environments written the way the paper's reference writes a
one-question environment (`spade.templates.questions.fixed_question_env`: a plain class, one fixed
question, a `\\boxed{}` answer, one reply):

- **near**: fresh renders of the trained question families (`questions.TRAIN_FAMILIES`), 10 per
  family at level 1, in trained phrasings with trained answer instructions (the reference's
  half of the time, as the warm start shows them). The render seeds (`near/<family>/<i>`) are
  used by no training data. What self-play on those families should improve.
- **far**: the held-out families (`questions.HELDOUT_FAMILIES`, never trained on), 16 per family
  at level 1; item `i` asks in the held-out phrasing when `i` is odd and with a held-out answer
  instruction when `i // 2` is odd (a balanced 2 x 2 design over the items); plus, when the
  reasoning-gym package is importable, 20 items each of `chain_sum` and `letter_counting` at
  curriculum level 0 (`spade.evals.suites.rgym`; the two tasks the warm-started 135M model wins at
  all at that level). What would show transfer.

Everything is deterministic: the same items in the same order on every machine (the far set
differs only by whether reasoning-gym is installed, which its `content_hash` reflects). Each
item's `source` names its set and family (`near:add/3`, `far:smaller/7`,
`far:reasoning-gym:chain_sum/4`), so `EvalResult.by_family` groups by `near:add`.
The evaluation and its paired statistic are `spade.evals.paired` and `spade.evals.winrate`
(docs/evaluation.md); a run makes it through `spade.evals.before_after`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import random
from collections.abc import Callable

from spade import templates
from spade.sandbox import SandboxConfig
from spade.templates import questions
from spade.types import COMPACT, Program

NEAR_PER_FAMILY = 10
"""Items per trained family in the near set (28 families: 280 items)."""
FAR_PER_FAMILY = 16
"""Items per held-out family in the far set (7 families: 112 items)."""
FAR_REASONING_GYM = (("chain_sum", 20), ("letter_counting", 20))
"""reasoning-gym datasets and item counts in the far set (when the package is installed)."""
REASONING_GYM_LEVEL = 0
REASONING_GYM_SEED = 0
LEVEL = 1
"""Question level of both sets (the loop and the warm start's commonest level)."""
SUBSET_ITEMS = 84
"""Default size of the learning curve's fixed near subset (`near_subset`)."""
FORMAT = 1
"""Bump when the construction below changes meaning without changing the programs."""


@dataclasses.dataclass(frozen=True)
class EvalSet:
    """A named, ordered set of evaluation items, each played once."""

    name: str
    programs: tuple[Program, ...]
    preload: tuple[str, ...] = ()
    """Modules the sandbox's zygote must import for these programs (reasoning-gym's)."""

    @functools.cached_property
    def content_hash(self) -> str:
        """sha256 over the name, each program's source label and code, in order: the cache key
        of an evaluation's outcomes on this set."""
        h = hashlib.sha256(f"spade.evalsets/{FORMAT}/{self.name}".encode())
        for p in self.programs:
            h.update(b"\0" + p.source.encode() + b"\0" + p.code.encode())
        return h.hexdigest()

    @property
    def families(self) -> dict[str, list[int]]:
        """Item indices by family (the source before its last `/`), in first-seen order."""
        out: dict[str, list[int]] = {}
        for i, p in enumerate(self.programs):
            out.setdefault(p.source.rsplit("/", 1)[0], []).append(i)
        return out

    @property
    def parts(self) -> dict[str, list[int]]:
        """Item indices of the set's parts: its question families, and reasoning-gym items."""
        out: dict[str, list[int]] = {}
        for i, p in enumerate(self.programs):
            rgym = p.source.startswith(f"{self.name}:reasoning-gym:")
            out.setdefault("reasoning-gym" if rgym else "question families", []).append(i)
        return out

    def sandbox_config(self, base: SandboxConfig) -> SandboxConfig:
        """`base`, or a suite sandbox that preloads what these programs import."""
        if not self.preload:
            return base
        from spade.evals.suites import suite_sandbox_config

        return suite_sandbox_config("reasoning-gym", base)


def _class_name(family: str) -> str:
    return "".join(part.title() for part in family.split("_")) + "Env"


def _question_items(
    set_name: str,
    families: list[str],
    per_family: int,
    held_out: Callable[[int], bool],
    instructions: Callable[[int, random.Random], str],
) -> list[Program]:
    out = []
    for family in families:
        seen: set[str] = set()
        for i in range(per_family):
            # a redraw (another seed) when a render repeats one already in the family
            for retry in range(100):
                suffix = "" if retry == 0 else f"/{retry}"
                rng = random.Random(f"{set_name}/{family}/{i}{suffix}")
                question = questions.draw(family, rng, LEVEL, held_out=held_out(i))
                instruction = instructions(i, rng)
                code = questions.fixed_question_env(question, instruction, _class_name(family))
                if code not in seen:
                    break
            seen.add(code)
            out.append(
                Program.from_code(
                    code, hint="", skill=questions.SKILL, source=f"{set_name}:{family}/{i}"
                )
            )
    return out


def _trained_instruction(i: int, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return questions.REFERENCE_INSTRUCTION
    return rng.choice(questions.TRAIN_INSTRUCTIONS[1:])


def _far_instruction(i: int, rng: random.Random) -> str:
    if (i // 2) % 2 == 1:
        return rng.choice(questions.HELDOUT_INSTRUCTIONS)
    return _trained_instruction(i, rng)


@functools.cache
def near_set() -> EvalSet:
    """Fresh level-1 renders of every trained family, trained phrasings and instructions."""
    programs = _question_items(
        "near",
        sorted(questions.TRAIN_FAMILIES),
        NEAR_PER_FAMILY,
        lambda i: False,
        _trained_instruction,
    )
    return EvalSet("near", tuple(programs))


def reasoning_gym_available() -> bool:
    try:
        import reasoning_gym  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def far_set(reasoning_gym: bool | None = None) -> EvalSet:
    """The held-out families (held-out phrasings and instructions on half the items each) and,
    when `reasoning_gym` (None: when the package is importable), reasoning-gym level-0 items."""
    programs = _question_items(
        "far",
        sorted(questions.HELDOUT_FAMILIES),
        FAR_PER_FAMILY,
        lambda i: i % 2 == 1,
        _far_instruction,
    )
    preload: tuple[str, ...] = ()
    if reasoning_gym is None:
        reasoning_gym = reasoning_gym_available()
    if reasoning_gym:
        from spade.evals.suites import SUITES
        from spade.evals.suites.rgym import programs as rgym_programs

        for name, count in FAR_REASONING_GYM:
            items = rgym_programs(
                [name], limit=count, level=REASONING_GYM_LEVEL, seed=REASONING_GYM_SEED
            )
            programs += [dataclasses.replace(p, source=f"far:{p.source}", hint="") for p in items]
        preload = SUITES["reasoning-gym"].preload
    return EvalSet("far", tuple(programs), preload)


def paired_sets() -> tuple[EvalSet, ...]:
    """The sets `spade train --eval-set paired` evaluates before and after, in order."""
    return near_set(), far_set()


def subset_indices(evalset: EvalSet, items: int) -> list[int]:
    """`items` indices of `evalset`, taken round-robin over its families (the first item of
    every family, then the second, ...), in set order: a fixed, stratified subset."""
    if items < 1:
        raise ValueError(f"a subset needs at least one item, got {items}")
    by_family = list(evalset.families.values())
    chosen: list[int] = []
    for rank in range(max(len(v) for v in by_family)):
        for indices in by_family:
            if rank < len(indices) and len(chosen) < items:
                chosen.append(indices[rank])
    return sorted(chosen)


def near_subset(items: int = SUBSET_ITEMS) -> EvalSet:
    """The learning curve's fixed subset of the near set (`subset_indices`)."""
    near = near_set()
    chosen = subset_indices(near, items)
    return EvalSet(f"near[{items}]", tuple(near.programs[i] for i in chosen))


def eval_programs(count_per_family: int = 2, seed: int = 1234) -> list[Program]:
    """The game evaluation set (`spade train --eval-set heldout`): `count_per_family` compact
    renders of each held-out template family (`spade.templates.eval_families()`) and one render of
    every mini family, with a render seed no training data uses. Deterministic.

    Of the 18 mini families, the six of `MINI_EVAL_FAMILIES` are held out of every warm start;
    the other twelve are in it (other parameters and other episodes: the warm start plays
    random 31-bit seeds, the evaluation seeds 0, 1, ...). Held-out families alone are won ~1%
    of the time by the warm-started 135M model (docs/warmstart.md), too rarely for an
    evaluation to show a change; with the trained families the whole set is in the 5-50%
    band the miniature replication needs. The source of each program says which part it is in
    (`eval:<family>/n`, `eval:mini:<family>/n`, `eval:mini-seen:<family>/n`)."""
    from spade.templates.mini import MINI_EVAL_FAMILIES, MINI_FAMILIES, render_mini

    rng = random.Random(seed)
    out: list[Program] = []
    seen_minis = [f for f in MINI_FAMILIES if f not in MINI_EVAL_FAMILIES]
    families = (
        *templates.eval_families(),
        *(f"mini:{f}" for f in MINI_EVAL_FAMILIES),
        *(f"mini-seen:{f}" for f in seen_minis),
    )
    for family in families:
        seen: set[str] = set()
        mini = family.startswith("mini")
        # one render of a mini family: two would be near-duplicates (same lines, other names)
        while len(seen) < (1 if mini else count_per_family):
            if mini:
                r = render_mini(rng, family.split(":", 1)[1])
            else:
                r = templates.render(rng, family, form=COMPACT)
            if r.code in seen:
                continue
            seen.add(r.code)
            source = f"eval:{family}/{len(seen)}"
            out.append(Program.from_code(r.code, hint=r.hint, skill=r.skill, source=source))
    return out
