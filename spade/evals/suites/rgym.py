"""reasoning-gym (Apache-2.0, `pip install "spade-rl[eval]"`) as single-turn environments.

Each item becomes an ordinary environment program: inside the sandbox it rebuilds the item with
`reasoning_gym.create_dataset(name, seed=, size=)` (at a curriculum level when one is given),
shows the question with "answer as \\boxed{...}", and scores the reply's last `\\boxed{}` with the
dataset's own `score_answer`. A win is a full score (1.0): 33 datasets give partial credit to
wrong answers. The scorer runs in the sandbox because it reads model text and some scorers parse
it with sympy (which evaluates).

Traps handled here (EVAL-SUITES.md): `game_of_life_halting` scores any non-empty answer 1.0 and
is excluded; `list_functions` and the six datasets whose items depend on `PYTHONHASHSEED`
(codeio, isomorphic_strings, knight_swap, polynomial_multiplication, ransom_note, word_ladder)
are excluded as not deterministic; a scorer that raises (`prime_factorization` on a non-integer)
scores 0; `arc_agi` and `rearc` need data files the wheel lacks and are excluded; `jugs`
generates unsolvable items whose own reference answer scores 0, and is excluded.
"""

from __future__ import annotations

from collections.abc import Sequence

from spade.types import Program

EXCLUDED = {
    "game_of_life_halting": "scores any non-empty answer 1.0",
    "list_functions": "items are not deterministic",
    "codeio": "items depend on PYTHONHASHSEED",
    "isomorphic_strings": "items depend on PYTHONHASHSEED",
    "knight_swap": "items depend on PYTHONHASHSEED",
    "polynomial_multiplication": "items depend on PYTHONHASHSEED",
    "ransom_note": "items depend on PYTHONHASHSEED",
    "word_ladder": "items depend on PYTHONHASHSEED",
    "arc_agi": "needs data files outside the wheel",
    "rearc": "needs data files outside the wheel",
    "composite": "a mixture of the others, configured by the caller",
    "jugs": "some items are unsolvable and their reference answer scores 0 (2 of 10 at level 1);"
    " from level 3 no item can be generated (ValueError after 83 s)",
}
"""Datasets left out, and why."""


NO_REFERENCE = frozenset(
    {"boxnet", "graph_color", "propositional_logic", "rubiks_cube", "rush_hour"}
)
"""Datasets whose items have no reference answer (`answer` is None: the scorer checks a
proposed solution): they evaluate a model, but `--policy solution` has nothing to replay."""

DEFAULT_SUBSETS = (
    "basic_arithmetic",
    "chain_sum",
    "letter_counting",
    "number_sorting",
    "spell_backward",
    "word_sorting",
)
"""`--suite reasoning-gym` without subsets: short single-answer tasks a small model can attempt."""

PROMPT = "\n\nGive only your final answer, as \\boxed{answer}."

TEMPLATE = '''"""reasoning-gym {name} item {index} (seed {seed}{level_text})."""
import reasoning_gym
from reasoning_gym import factory

NAME, SEED, INDEX, LEVEL = {name!r}, {seed!r}, {index!r}, {level!r}


def _last_boxed(text):
    start = text.rfind("\\\\boxed{{")
    if start < 0:
        return None
    i, depth = start + len("\\\\boxed{{"), 1
    for j in range(i, len(text)):
        depth += {{"{{": 1, "}}": -1}}.get(text[j], 0)
        if depth == 0:
            return text[i:j].strip()
    return None


class ReasoningGymEnv:
    def __init__(self, max_turns=1):
        self.max_turns = 1
        if LEVEL is None:
            self.data = reasoning_gym.create_dataset(NAME, seed=SEED, size=INDEX + 1)
        else:
            curriculum = factory.create_curriculum(NAME)
            curriculum.set_global_level(LEVEL)
            config = curriculum.generate_configuration({{"seed": SEED, "size": INDEX + 1}})
            self.data = factory.DATASETS[NAME][0](config=config)
        self.item = self.data[INDEX]

    def reset(self, seed=None):
        return str(self.item["question"]) + {prompt!r}, {{}}

    def step(self, action):
        answer = _last_boxed(action)
        score = 0.0
        if answer:
            try:
                score = float(self.data.score_answer(answer, entry=self.item))
            except Exception:
                score = 0.0
        won = score >= 1.0
        feedback = "Correct." if won else "Incorrect."
        return feedback, (1.0 if won else 0.0), True, False, {{"score": score}}

    def solution(self):
        if self.item.get("answer") is None:  # checked, not compared: nothing to replay
            return None
        return ["\\\\boxed{{" + str(self.item["answer"]) + "}}"]
'''


def datasets() -> list[str]:
    """Every dataset of the installed reasoning-gym that is not `EXCLUDED`."""
    from reasoning_gym import factory

    return sorted(n for n in factory.DATASETS if n not in EXCLUDED)


def _check_level(name: str, level: int) -> None:
    """Refuse a level reasoning-gym cannot build items at, before any sandbox starts: its
    curricula give invalid configurations at some levels (caesar_cipher from 2, modulo_grid at
    1, survo at 3), which each config's own `validate()` reports."""
    from reasoning_gym import factory

    if not factory.has_curriculum(name):
        raise ValueError(f"reasoning-gym:{name} has no curriculum, so no --level")
    curriculum = factory.create_curriculum(name)
    curriculum.set_global_level(level)
    try:
        config = curriculum.generate_configuration({"seed": 0, "size": 1})
        if hasattr(config, "validate"):  # most configs have one (power_function, tsumego not)
            config.validate()
    except (AssertionError, ValueError) as exc:
        raise ValueError(
            f"reasoning-gym:{name} level {level}: its curriculum gives an invalid "
            f"configuration ({exc or type(exc).__name__})"
        ) from None


def programs(
    subsets: Sequence[str], *, limit: int, level: int | None = None, seed: int = 0
) -> list[Program]:
    """`limit` items of each dataset in `subsets` (empty: `DEFAULT_SUBSETS`) at curriculum
    `level` (None: the dataset's default configuration); skill `reasoning-gym:<name>`."""
    from reasoning_gym import factory

    names = list(subsets) or list(DEFAULT_SUBSETS)
    for name in names:
        if name in EXCLUDED:
            raise ValueError(f"reasoning-gym:{name} is excluded: {EXCLUDED[name]}")
        if name not in factory.DATASETS:
            raise ValueError(f"reasoning-gym has no dataset {name!r}")
        if level is not None:
            _check_level(name, level)
    out = []
    for name in names:
        for index in range(limit):
            code = TEMPLATE.format(
                name=name,
                seed=seed,
                index=index,
                level=level,
                level_text="" if level is None else f", level {level}",
                prompt=PROMPT,
            )
            out.append(
                Program.from_code(
                    code,
                    skill=f"reasoning-gym:{name}",
                    source=f"reasoning-gym:{name}/{index}",
                )
            )
    return out
