"""Compact environment scaffolds: base classes a generated file subclasses without importing.

A small model cannot write a 150-line environment; the whole file is its error surface. With a
scaffold the Designer writes only what makes the task itself, and the base does the contract
(`reset`/`step`, `\\boxed{}` parsing, answer comparison, feedback, turn limit, `solution()`):

    class TimesTableEnv(QuestionEnv):
        \"\"\"Multiply two numbers.\"\"\"
        def generate(self, rng):
            a, b = rng.randint(2, 3 + 3 * self.difficulty), rng.randint(2, 9)
            return f"What is {a} times {b}?", a * b

    class GuessEnv(GameEnv):
        \"\"\"Find the hidden number from higher/lower feedback.\"\"\"
        def start(self, rng):
            self.secret = rng.randint(1, 10 * self.difficulty)
            return f"Guess my number from 1 to {10 * self.difficulty}."
        def move(self, action):
            n = int(action)
            if n == self.secret:
                return "Correct!", 1.0, True
            return ("Higher." if n < self.secret else "Lower."), 0.0, False
        def solve(self):
            return [self.secret]

Programs that use them are ordinary environments (same sandbox, validator, pool, export). This
file is standard library only and self-contained, because it has three readers: the runtime
executes its source into a fresh namespace for every environment file (so a program that
tampers with a base class changes only its own copy), `standalone()` (standalone.py) inlines it
into exported files for the paper's reference runtime, and trusted code imports it for tests.
Every name it defines at top level is a scaffold or starts with `_spade_`; no class here is
discovered as an environment (`QuestionEnv` / `GameEnv` are skipped by the loader, like
`ToolUseBaseEnv`).
"""

import math as _spade_math
import random as _spade_random


def _spade_boxed(text):
    """Content of the first `\\boxed{...}` (braces balanced), else the stripped text."""
    text = str(text)
    start = text.find("\\boxed{")
    if start < 0:
        return text.strip()
    depth, i = 1, start + len("\\boxed{")
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j].strip()
    return text[i:].strip()


def _spade_number(text):
    try:
        value = float(str(text).replace("$", "").replace(",", "").strip())
    except ValueError:
        return None
    return value if _spade_math.isfinite(value) else None


def _spade_same(given, expected):
    """The reference's rule: case-insensitive exact match, or numbers within 0.01."""
    want = str(expected).strip()
    if str(given).strip().lower() == want.lower():
        return True
    a, b = _spade_number(given), _spade_number(want)
    return a is not None and b is not None and abs(a - b) <= 0.01 + 1e-9


def _spade_level(difficulty):
    try:
        return min(3, max(1, int(difficulty)))
    except (TypeError, ValueError):
        return 2


def _spade_text(value, what, limit=20000):
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{what} must be a non-empty string, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"{what} is {len(value)} characters (at most {limit})")
    return value


def _spade_answer(value):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"the answer must be a str, int or float, got {type(value).__name__}")
    if isinstance(value, float) and not _spade_math.isfinite(value):
        raise ValueError("the answer must be a finite number")
    if isinstance(value, str) and not value.strip():
        raise ValueError("the answer must not be empty")
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    return value


class QuestionEnv:
    """Single-answer base: write `generate(self, rng) -> (question, answer)`.

    `rng` is a `random.Random(seed)`, `self.difficulty` is 1 (easy) to 3 (hard). The agent answers
    as `\\boxed{answer}`; an answer matches like the reference's (case-insensitive, or numbers
    within 0.01). Override `check(self, given) -> bool` for another comparison; set `attempts`
    (wrong answers allowed, default 1) or `instruction` as class attributes.
    """

    attempts = 1
    instruction = "Give your final answer as \\boxed{answer}."

    def __init__(self, max_turns=25, difficulty=2):
        self.max_turns = max_turns
        self.difficulty = _spade_level(difficulty)
        self.question = None
        self.answer = None
        self.turn = 0
        self.tries = 0
        self.over = False

    def generate(self, rng):
        raise NotImplementedError("a QuestionEnv subclass writes generate(self, rng)")

    def check(self, given):
        return _spade_same(given, self.answer)

    def reset(self, seed=None):
        made = self.generate(_spade_random.Random(seed))
        if not isinstance(made, (tuple, list)) or len(made) != 2:
            raise TypeError("generate() must return (question, answer)")
        self.question = _spade_text(made[0], "the question")
        self.answer = _spade_answer(made[1])
        self.turn, self.tries, self.over = 0, 0, False
        instruction = str(self.instruction)
        if "\\boxed" in self.question:
            return self.question, {}
        return f"{self.question}\n{instruction}", {}

    def step(self, action):
        if self.answer is None:
            raise RuntimeError("step() before reset()")
        if self.over:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        given = _spade_boxed(action)
        if not given:
            obs, reward, done = "Give your answer as \\boxed{answer}.", 0.0, False
        elif self.check(given):
            obs, reward, done = "Correct!", 1.0, True
        else:
            self.tries += 1
            if self.tries >= max(1, int(self.attempts)):
                obs, reward, done = f"Wrong. The answer was {self.answer}.", 0.0, True
            else:
                obs, reward, done = "Wrong, try again.", 0.0, False
        self.over = done
        truncated = not done and self.turn >= self.max_turns
        return obs, reward, done, truncated, {}

    def solution(self):
        return [f"\\boxed{{{self.answer}}}"]


class GameEnv:
    """Multi-turn base: write `start(self, rng) -> observation` (set up the state, describe it)
    and `move(self, action) -> (feedback, reward, done)` (one rule for every turn).

    `action` is the content of the agent's `\\boxed{...}` (stripped). A `ValueError`,
    `TypeError`, `KeyError` or `IndexError` raised by `move` (for example `int(action)` on a
    word) is an invalid move: the agent is told and the game goes on. Optional
    `solve(self) -> list of moves` right after `start` makes `solution()` (each move boxed).
    `self.difficulty` is 1 (easy) to 3 (hard), `self.turn` counts moves.
    """

    instruction = "Give each move as \\boxed{move}."

    def __init__(self, max_turns=25, difficulty=2):
        self.max_turns = max_turns
        self.difficulty = _spade_level(difficulty)
        self.turn = 0
        self.over = False
        self.started = False

    def start(self, rng):
        raise NotImplementedError("a GameEnv subclass writes start(self, rng)")

    def move(self, action):
        raise NotImplementedError("a GameEnv subclass writes move(self, action)")

    def solve(self):
        return None

    def reset(self, seed=None):
        self.turn, self.over = 0, False
        obs = _spade_text(self.start(_spade_random.Random(seed)), "start()'s observation")
        self.started = True
        if "\\boxed" in obs:
            return obs, {}
        return f"{obs}\n{self.instruction}", {}

    def step(self, action):
        if not self.started:
            raise RuntimeError("step() before reset()")
        if self.over:
            return "The episode is over.", 0.0, True, False, {}
        self.turn += 1
        try:
            result = self.move(_spade_boxed(action))
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            result = (f"Invalid move ({type(exc).__name__}: {exc}).", 0.0, False)
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            raise TypeError("move() must return (feedback, reward, done)")
        feedback, reward, done = result
        feedback = _spade_text(feedback, "move()'s feedback")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            raise TypeError(f"move()'s reward must be a number, got {type(reward).__name__}")
        done = bool(done)
        self.over = done
        truncated = not done and self.turn >= self.max_turns
        return feedback, float(reward), done, truncated, {}

    def solution(self):
        moves = self.solve()
        if moves is None:
            return None
        if isinstance(moves, (str, int, float)):
            moves = [moves]
        return [m if "\\boxed{" in str(m) else f"\\boxed{{{m}}}" for m in moves]
