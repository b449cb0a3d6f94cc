"""Recover a hidden integer polynomial from a few chosen evaluations.

skill: Mathematical Reasoning
hint: A degree-d polynomial is fixed by d+1 values. Query x = 0, 1, 2, ...: p(0) is the constant term, and finite differences (or Lagrange interpolation) give the rest. Check your answer against every value you saw.
difficulty: 1-3
turns: multi
"""
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_INT = re.compile(r"^[+-]?\d+$")

# difficulty -> (degree, coefficient bound, number of evaluations allowed)
_LEVELS = {1: (2, 5, 4), 2: (3, 9, 4), 3: (4, 12, 5)}
_MAX_ANSWERS = 2
_X_LIMIT = 10


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


class PolynomialProbeEnv:
    def __init__(self, max_turns=20, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.degree, self.bound, self.eval_budget = _LEVELS[difficulty]
        self._coeffs = []
        self._done = True

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        # c0 .. c_d, leading coefficient non-zero
        self._coeffs = [self._rng.randint(-self.bound, self.bound) for _ in range(self.degree)]
        lead = self._rng.choice([c for c in range(-self.bound, self.bound + 1) if c != 0])
        self._coeffs.append(lead)
        self._turn = 0
        self._evals_left = self.eval_budget
        self._answers_left = _MAX_ANSWERS
        self._seen = []
        self._done = False
        d = self.degree
        names = ", ".join(f"c{i}" for i in range(d + 1))
        obs = (
            f"A hidden polynomial p(x) = c0 + c1*x + ... + c{d}*x^{d} has degree exactly {d} and integer "
            f"coefficients in [-{self.bound}, {self.bound}] (c{d} != 0).\n"
            f"Actions (one per turn):\n"
            f"  \\boxed{{eval X}}  -> reveals p(X) for an integer X with |X| <= {_X_LIMIT}, e.g. \\boxed{{eval 2}}. "
            f"You may evaluate at most {self.eval_budget} times.\n"
            f"  \\boxed{{answer {names}}} -> submit all coefficients, constant term first, "
            f"e.g. \\boxed{{answer {' '.join(['3', '-1', '0', '2', '5'][:d + 1])}}}.\n"
            f"You have {_MAX_ANSWERS} answer attempts; a wrong answer tells you which coefficients are wrong. "
            f"Success: submit exactly the right coefficients. Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"evals_left": self._evals_left, "answers_left": self._answers_left,
                "turn": self._turn, "difficulty": self.difficulty}

    def _value(self, x):
        return sum(c * x ** i for i, c in enumerate(self._coeffs))

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turn += 1
        obs, reward, terminated = self._play(_content(action).lower())
        truncated = False
        if terminated:
            self._done = True
        elif self._turn >= self.max_turns:
            self._done, truncated, reward = True, True, 0.0
            obs += "\nTurn budget exhausted."
        return obs, reward, terminated, truncated, self._info()

    def _play(self, text):
        parts = text.replace(",", " ").split()
        if len(parts) == 2 and parts[0] == "eval" and _INT.match(parts[1]):
            x = int(parts[1])
            if abs(x) > _X_LIMIT:
                return f"X must satisfy |X| <= {_X_LIMIT}.", -0.05, False
            if self._evals_left == 0:
                return "No evaluations left: submit \\boxed{answer ...}.", -0.05, False
            self._evals_left -= 1
            y = self._value(x)
            self._seen.append(f"p({x}) = {y}")
            return (f"p({x}) = {y}. Evaluations left: {self._evals_left}. "
                    f"Known so far: {'; '.join(self._seen)}"), 0.0, False
        if parts and parts[0] == "answer":
            vals = parts[1:]
            if len(vals) != self.degree + 1 or not all(_INT.match(v) for v in vals):
                return (f"An answer needs exactly {self.degree + 1} integers c0 .. c{self.degree}, "
                        f"e.g. \\boxed{{answer 1 2 3{' 4' * (self.degree - 2)}}}."), -0.05, False
            guess = [int(v) for v in vals]
            if guess == self._coeffs:
                return "Correct! You recovered the polynomial.", 1.0, True
            self._answers_left -= 1
            wrong = ", ".join(f"c{i}" for i, (g, c) in enumerate(zip(guess, self._coeffs)) if g != c)
            if self._answers_left == 0:
                return f"Wrong: {wrong} incorrect. No answer attempts left.", 0.0, True
            return (f"Wrong: {wrong} incorrect (the other coefficients are right). "
                    f"Answer attempts left: {self._answers_left}."), 0.0, False
        return ("Invalid action. Use \\boxed{eval X} (e.g. \\boxed{eval 3}) or "
                "\\boxed{answer c0 c1 ...}."), -0.05, False

    def solution(self):
        # Evaluate at 0..d (d+1 points determine the polynomial), then answer.
        moves = [f"\\boxed{{eval {x}}}" for x in range(self.degree + 1)]
        moves.append("\\boxed{answer " + " ".join(str(c) for c in self._coeffs) + "}")
        return moves
