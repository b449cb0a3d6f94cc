"""Combine the given numbers with + - * / to hit a target exactly (Countdown-style).

skill: Mathematical Reasoning
hint: Work backwards: find a product of two given numbers (or of a number and a small sum) near the target, then fix the remainder with the leftover numbers. Check divisibility before dividing, and recount which numbers you have used.
difficulty: 1-3
turns: single
"""
import random
import re
from collections import Counter
from fractions import Fraction

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_TOKEN = re.compile(r"\s*(\d+|[-+*/()])")
_ATTEMPTS = 3

# difficulty -> (small numbers, large numbers, numbers used to build the target, target range, use all?)
_LEVELS = {
    1: (4, 0, 3, (21, 99), False),
    2: (4, 1, 4, (101, 500), False),
    3: (4, 2, 6, (101, 999), True),
}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


class _Parser:
    """Recursive-descent evaluator over Fractions that records the literals used."""

    def __init__(self, text):
        text = text.replace("×", "*").replace("÷", "/").replace("x", "*").replace("X", "*")
        pos, self.toks = 0, []
        while pos < len(text.rstrip()):
            m = _TOKEN.match(text, pos)
            if not m:
                raise ValueError(f"unexpected character {text[pos:].strip()[:1]!r}")
            self.toks.append(m.group(1))
            pos = m.end()
        self.i, self.used = 0, []

    def parse(self):
        if not self.toks:
            raise ValueError("empty expression")
        val = self.expr()
        if self.i != len(self.toks):
            raise ValueError(f"unexpected {self.toks[self.i]!r}")
        return val

    def _peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def expr(self):
        val = self.term()
        while self._peek() in ("+", "-"):
            op = self.toks[self.i]
            self.i += 1
            rhs = self.term()
            val = val + rhs if op == "+" else val - rhs
        return val

    def term(self):
        val = self.atom()
        while self._peek() in ("*", "/"):
            op = self.toks[self.i]
            self.i += 1
            rhs = self.atom()
            if op == "/" and rhs == 0:
                raise ValueError("division by zero")
            val = val * rhs if op == "*" else val / rhs
        return val

    def atom(self):
        tok = self._peek()
        self.i += 1
        if tok == "(":
            val = self.expr()
            if self._peek() != ")":
                raise ValueError("missing ')'")
            self.i += 1
            return val
        if tok is not None and tok.isdigit():
            self.used.append(int(tok))
            return Fraction(int(tok))
        raise ValueError("expected a number or '('")


class CountdownEnv:
    def __init__(self, max_turns=10, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self._done = True

    def _build(self, nums):
        """Combine random pairs until one expression remains; intermediates stay positive integers."""
        pool = [(n, str(n)) for n in nums]
        while len(pool) > 1:
            self._rng.shuffle(pool)
            (a, ea), (b, eb) = pool.pop(), pool.pop()
            a, ea, b, eb = (a, ea, b, eb) if a >= b else (b, eb, a, ea)
            ops = ["+", "*"] + (["-"] if a > b else []) + (["/"] if b > 1 and a % b == 0 else [])
            op = self._rng.choice(ops)
            val = {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b else 0}[op]
            pool.append((val, f"({ea} {op} {eb})"))
        return pool[0]

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        n_small, n_large, n_use, (lo, hi), self._use_all = _LEVELS[self.difficulty]
        while True:
            nums = [self._rng.randint(1, 10) for _ in range(n_small)]
            nums += self._rng.sample([25, 50, 75, 100], n_large)
            chosen = self._rng.sample(nums, n_use)
            target, expr = self._build(chosen)
            if lo <= target <= hi and target not in nums and target != 100:
                break
        self._numbers = sorted(nums)
        self._target, self._expr = target, expr[1:-1] if expr.startswith("(") else expr
        self._attempts = _ATTEMPTS
        self._turn = 0
        self._done = False
        rule = "every number exactly once" if self._use_all else "each number at most once (you may leave some out)"
        obs = (
            f"Numbers: {', '.join(map(str, self._numbers))}. Target: {self._target}.\n"
            f"Write an arithmetic expression with + - * / and parentheses that equals the target exactly, "
            f"using {rule}. A number listed twice may be used twice. Fractions may appear along the way, "
            f"but you cannot glue digits together.\n"
            f"Answer format: \\boxed{{(7 + 3) * 5 - 2}}. You have {_ATTEMPTS} attempts; a wrong attempt tells "
            f"you the value your expression reached. Malformed expressions or rule violations do not use up an "
            f"attempt. Success: an expression worth exactly {self._target}. Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"attempts_left": self._attempts, "turn": self._turn, "difficulty": self.difficulty}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turn += 1
        obs, reward, terminated = self._play(_content(action))
        truncated = False
        if terminated:
            self._done = True
        elif self._turn >= self.max_turns:
            self._done, truncated, reward = True, True, 0.0
            obs += "\nTurn budget exhausted."
        return obs, reward, terminated, truncated, self._info()

    def _play(self, text):
        try:
            parser = _Parser(text)
            value = parser.parse()
        except ValueError as exc:
            return f"Could not read that expression ({exc}). Example: \\boxed{{(7 + 3) * 5 - 2}}.", -0.05, False
        have, used = Counter(self._numbers), Counter(parser.used)
        extra = sorted((used - have).elements())
        if extra:
            return f"Rule violation: {extra} not available (numbers: {self._numbers}).", -0.05, False
        if self._use_all and used != have:
            missing = sorted((have - used).elements())
            return f"Rule violation: you must use every number exactly once; unused: {missing}.", -0.05, False
        if value == self._target:
            return f"Correct! That expression equals {self._target}.", 1.0, True
        self._attempts -= 1
        gap = value - self._target
        where = f"{abs(gap)} {'above' if gap > 0 else 'below'}"
        msg = f"Your expression equals {value}, which is {where} the target {self._target}."
        if self._attempts == 0:
            return msg + " No attempts left.", 0.0, True
        return msg + f" Attempts left: {self._attempts}.", 0.0, False

    def solution(self):
        return [f"\\boxed{{{self._expr}}}"]
