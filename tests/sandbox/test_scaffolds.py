"""The compact scaffolds (spade/sandbox/scaffolds.py): QuestionEnv and GameEnv.

Trusted-code unit tests of the base classes' behaviour, their isolation (a fresh copy per file),
class discovery next to them, `standalone()` for the reference's runtime (run by a loader that
knows nothing of the scaffolds), and compact programs through the real validator. The hostile
cases (a hook that spins, returns bad values, or rewrites its base) are fixtures in
tests/programs/hostile/ checked by tests/sandbox/test_hostile.py.
"""

from __future__ import annotations

import ast
import asyncio
import sys
from typing import Any

import pytest

from spade.sandbox import runtime
from spade.sandbox.runtime import build_namespace, env_class_names, find_env_class, instantiate
from spade.sandbox.standalone import standalone
from spade.types import Program

TIMES = '''class TimesTableEnv(QuestionEnv):
    """Multiply two numbers."""
    def generate(self, rng):
        a, b = rng.randint(2, 3 + 3 * self.difficulty), rng.randint(2, 9)
        return f"What is {a} times {b}?", a * b
'''

GUESS = '''class GuessEnv(GameEnv):
    """Find the hidden number from higher/lower feedback."""
    def start(self, rng):
        self.secret = rng.randint(1, 30 * self.difficulty)
        return f"Guess my number from 1 to {30 * self.difficulty}."
    def move(self, action):
        n = int(action)
        if n == self.secret:
            return "Correct!", 1.0, True
        if self.turn >= 6:
            return "Out of guesses.", 0.0, True
        return ("Higher." if n < self.secret else "Lower."), 0.0, False
    def solve(self):
        return [self.secret]
'''


def load(source: str, **kwargs: Any) -> Any:
    ns = build_namespace()
    exec(compile(source, "<test>", "exec"), ns)
    return instantiate(find_env_class(source, ns), 25, kwargs)


# --- QuestionEnv ---------------------------------------------------------------------------


def test_question_env_plays_one_question() -> None:
    env = load(TIMES)
    obs, info = env.reset(seed=3)
    assert info == {} and obs.endswith("Give your final answer as \\boxed{answer}.")
    a, b = (int(x) for x in obs.split("?")[0].removeprefix("What is ").split(" times "))
    assert env.answer == a * b
    assert env.solution() == [f"\\boxed{{{a * b}}}"]
    assert env.step(f"so \\boxed{{ {a * b} }}") == ("Correct!", 1.0, True, False, {})
    assert env.step("\\boxed{1}") == ("The episode is over.", 0.0, True, False, {})


def test_question_env_wrong_answer_ends_and_reveals() -> None:
    env = load(TIMES)
    env.reset(seed=3)
    obs, reward, terminated, truncated, _ = env.step("\\boxed{-5}")
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert obs == f"Wrong. The answer was {env.answer}."


def test_question_env_attempts_unboxed_and_turn_cap() -> None:
    source = TIMES.replace('"""Multiply two numbers."""', '"""Multiply."""\n    attempts = 2')
    env = load(source, max_turns=3)
    env.reset(seed=0)
    assert env.step("") == ("Give your answer as \\boxed{answer}.", 0.0, False, False, {})
    assert env.step("\\boxed{-1}") == ("Wrong, try again.", 0.0, False, False, {})
    assert env.step("\\boxed{-2}")[1:4] == (0.0, True, False)  # second wrong try ends it
    env.reset(seed=0)  # a reset clears tries and turns
    assert env.step("\\boxed{x}") == ("Wrong, try again.", 0.0, False, False, {})
    assert env.step("") == ("Give your answer as \\boxed{answer}.", 0.0, False, False, {})
    assert env.step("") == ("Give your answer as \\boxed{answer}.", 0.0, False, True, {})


def test_question_env_same_seed_same_question_and_difficulty() -> None:
    assert load(TIMES).reset(seed=11) == load(TIMES).reset(seed=11)
    assert load(TIMES, difficulty=9).difficulty == 3
    assert load(TIMES, difficulty=0).difficulty == 1
    assert load(TIMES, difficulty="x").difficulty == 2
    questions = {load(TIMES).reset(seed=s)[0] for s in range(20)}
    assert len(questions) > 5


@pytest.mark.parametrize(
    ("answer", "given", "won"),
    [
        ("'Paris'", "paris", True),
        ("2.5", "2.51", True),
        ("2.5", "2.6", False),
        ("1000", "1,000", True),
        ("12.0", "12", True),
    ],
)
def test_question_env_compares_like_the_reference(answer: str, given: str, won: bool) -> None:
    source = (
        f"class AEnv(QuestionEnv):\n    def generate(self, rng):\n        return 'Q?', {answer}\n"
    )
    env = load(source)
    env.reset(seed=0)
    assert env.step(f"\\boxed{{{given}}}")[1] == (1.0 if won else 0.0)
    env.reset(seed=0)
    assert env.step(env.solution()[0])[1] == 1.0


def test_question_env_custom_check_and_instruction_in_question() -> None:
    source = (
        "class WordEnv(QuestionEnv):\n"
        "    def generate(self, rng):\n"
        "        return 'Name a word with a q, as \\\\boxed{word}.', 'quiz'\n"
        "    def check(self, given):\n"
        "        return 'q' in given\n"
    )
    env = load(source)
    obs, _ = env.reset(seed=0)
    assert obs == "Name a word with a q, as \\boxed{word}."  # no second instruction
    assert env.step("\\boxed{aqua}")[1] == 1.0


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        ("'just a string'", TypeError),
        ("('Q?', 1, 2)", TypeError),
        ("(3, 4)", TypeError),
        ("('', 4)", TypeError),
        ("('Q?', None)", TypeError),
        ("('Q?', True)", TypeError),
        ("('Q?', float('nan'))", ValueError),
        ("('Q?', '  ')", ValueError),
        ("('x' * 20001, 1)", ValueError),
    ],
)
def test_question_env_rejects_bad_generate_results(returned: str, error: type) -> None:
    header = "class BadEnv(QuestionEnv):\n    def generate(self, rng):\n"
    env = load(f"{header}        return {returned}\n")
    with pytest.raises(error):
        env.reset(seed=0)


def test_question_env_needs_generate_and_reset_before_step() -> None:
    env = load("class EmptyEnv(QuestionEnv):\n    pass\n")
    with pytest.raises(RuntimeError, match="before reset"):
        env.step("\\boxed{1}")
    with pytest.raises(NotImplementedError, match="generate"):
        env.reset(seed=0)


# --- GameEnv -------------------------------------------------------------------------------


def test_game_env_plays_with_feedback_and_solution() -> None:
    env = load(GUESS)
    obs, _ = env.reset(seed=5)
    assert obs.endswith("Give each move as \\boxed{move}.")
    secret = env.secret
    low = "\\boxed{0}" if secret > 0 else "\\boxed{-1}"
    assert env.step(low) == ("Higher.", 0.0, False, False, {})
    assert env.turn == 1
    assert env.solution() == [f"\\boxed{{{secret}}}"]
    assert env.step(env.solution()[0]) == ("Correct!", 1.0, True, False, {})
    assert env.step("\\boxed{1}") == ("The episode is over.", 0.0, True, False, {})


def test_game_env_invalid_move_is_feedback_not_an_exception() -> None:
    env = load(GUESS)
    env.reset(seed=5)
    obs, reward, terminated, truncated, _ = env.step("\\boxed{seven}")
    assert obs.startswith("Invalid move (ValueError:")
    assert (reward, terminated, truncated) == (0.0, False, False)


def test_game_env_truncates_at_its_turn_cap() -> None:
    source = GUESS.replace("if self.turn >= 6:", "if False:")
    env = load(source, max_turns=2)
    env.reset(seed=5)
    wrong = f"\\boxed{{{env.secret + 1}}}"
    assert env.step(wrong)[2:4] == (False, False)
    assert env.step(wrong)[2:4] == (False, True)


@pytest.mark.parametrize(
    ("move", "error"),
    [
        ("return 'ok'", TypeError),
        ("return 'ok', 1.0", TypeError),
        ("return 5, 1.0, True", TypeError),
        ("return 'ok', 'big', True", TypeError),
        ("return 'ok', True, True", TypeError),
    ],
)
def test_game_env_rejects_bad_move_results(move: str, error: type) -> None:
    source = (
        "class BadEnv(GameEnv):\n    def start(self, rng):\n        return 'Go.'\n"
        f"    def move(self, action):\n        {move}\n"
    )
    env = load(source)
    env.reset(seed=0)
    with pytest.raises(error):
        env.step("\\boxed{1}")


def test_game_env_solution_forms() -> None:
    base = "class SEnv(GameEnv):\n    def start(self, rng):\n        return 'Go.'\n"
    assert load(base).solution() is None  # no solve(): no solution
    env = load(base + "    def solve(self):\n        return 'up'\n")
    assert env.solution() == ["\\boxed{up}"]
    env = load(base + "    def solve(self):\n        return ['\\\\boxed{a}', 3]\n")
    assert env.solution() == ["\\boxed{a}", "\\boxed{3}"]


# --- isolation and discovery ---------------------------------------------------------------


def test_every_file_gets_its_own_copy_of_the_bases() -> None:
    first, second = build_namespace(), build_namespace()
    assert first["QuestionEnv"] is not second["QuestionEnv"]
    exec("QuestionEnv.check = lambda self, given: True", first)
    exec("QuestionEnv.reset.__globals__['_spade_same'] = lambda g, e: True", first)
    env = load(TIMES)  # a later file sees the untouched base
    env.reset(seed=0)
    assert env.step("\\boxed{-3}")[1] == 0.0


def test_discovery_skips_scaffolds_unless_the_file_defines_only_that_class() -> None:
    assert env_class_names(TIMES) == ["TimesTableEnv"]
    own_copy = "class QuestionEnv:\n    pass\nclass FooEnv(QuestionEnv):\n    pass\n"
    assert env_class_names(own_copy) == ["FooEnv"]
    only = "class GameEnv:\n    def reset(self, seed=None):\n        return 'x', {}\n"
    assert env_class_names(only) == ["GameEnv"]
    assert env_class_names("class QuestionEnv:\n    pass\nclass GameEnv:\n    pass\n") == [
        "QuestionEnv"
    ]


# --- standalone files for the reference's runtime ---------------------------------------------


def reference_load(source: str) -> Any:
    """A loader as SPADE.md section 8 describes the reference's: the pre-filled namespace (here
    without any scaffold), the first top-level class whose name ends in `Env` except `Env` and
    `ToolUseBaseEnv`, built with no arguments."""
    ns = {k: v for k, v in build_namespace().items() if k not in runtime.SCAFFOLD_NAMES}
    exec(compile(source, "game_00000_000_x.py", "exec"), ns)
    names = [
        n.name
        for n in ast.parse(source).body
        if isinstance(n, ast.ClassDef)
        and n.name.endswith("Env")
        and n.name not in ("Env", "ToolUseBaseEnv")
    ]
    return ns[names[0]]()


@pytest.mark.parametrize("source", [TIMES, GUESS])
def test_standalone_files_play_the_same_on_the_reference_loader(source: str) -> None:
    out = standalone(source)
    with pytest.raises(NameError):
        reference_load(source)  # the compact file alone needs our runtime
    ours, theirs = load(source), reference_load(out)
    assert type(theirs).__name__ == type(ours).__name__
    for seed in range(5):
        assert theirs.reset(seed=seed) == ours.reset(seed=seed)
        assert theirs.solution() == ours.solution()
        for action in ["\\boxed{3}", *ours.solution()]:
            assert theirs.step(action) == ours.step(action)
    assert ast.get_docstring(ast.parse(out)) == ast.get_docstring(ast.parse(source).body[0])


def test_standalone_keeps_docstring_and_future_imports_first() -> None:
    source = '"""Times.\n\nskill: Mathematical Reasoning\n"""\nfrom __future__ import annotations\n'
    source += TIMES
    out = standalone(source)
    tree = ast.parse(out)
    assert ast.get_docstring(tree) == "Times.\n\nskill: Mathematical Reasoning"
    assert isinstance(tree.body[1], ast.ImportFrom) and tree.body[1].module == "__future__"
    assert Program.from_code(out).skill == "Mathematical Reasoning"
    assert env_class_names(out) == ["TimesTableEnv"]


def test_standalone_leaves_other_files_alone() -> None:
    plain = '"""Plain."""\nclass PlainEnv:\n    pass\n'
    assert standalone(plain) == plain
    own = "class QuestionEnv:\n    pass\nclass FooEnv(QuestionEnv):\n    pass\n"
    assert standalone(own) == own
    mention = '"""Not a QuestionEnv."""\nclass PlainEnv:\n    pass\n'  # only in a string
    assert standalone(mention) == mention


# --- through the real validator ----------------------------------------------------------------


@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")
def test_compact_programs_pass_the_validator_and_standalone_ones_too() -> None:
    from spade.envs.checks import ValidatorConfig
    from spade.envs.validate import validate_many
    from spade.sandbox import Sandbox

    sources = [TIMES, GUESS]
    programs = [Program.from_code(s) for s in sources]
    programs += [Program.from_code(standalone(s)) for s in sources]

    async def run() -> list[Any]:
        async with Sandbox() as sandbox:
            return await validate_many(programs, sandbox, ValidatorConfig(probe_seeds=4))

    verdicts = asyncio.run(run())
    assert [v.failures for v in verdicts] == [()] * 4
    assert [v.admitted for v in verdicts] == [True] * 4
    assert programs[0].description == "Multiply two numbers."
