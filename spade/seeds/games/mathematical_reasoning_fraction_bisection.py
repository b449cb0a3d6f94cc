"""Find a hidden fraction with a bounded denominator using larger/smaller feedback.

skill: Mathematical Reasoning
hint: The candidates are the finitely many reduced fractions p/q in (0,1) with q <= Q (a Farey sequence). Keep the interval (low, high) the feedback allows and guess near the median candidate inside it, not the plain midpoint: candidates are unevenly spread.
difficulty: 1-3
turns: multi
"""
import random
import re
from fractions import Fraction

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)

# difficulty -> (maximum denominator Q, number of guesses)
_LEVELS = {1: (12, 8), 2: (20, 8), 3: (40, 9)}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


def _candidates(q_max):
    return sorted({Fraction(p, q) for q in range(2, q_max + 1) for p in range(1, q)})


class FractionBisectionEnv:
    def __init__(self, max_turns=20, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.q_max, self.guesses = _LEVELS[difficulty]
        self._done = True

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self._secret = self._rng.choice(_candidates(self.q_max))
        self._guesses_left = self.guesses
        self._low, self._high = Fraction(0), Fraction(1)
        self._turn = 0
        self._done = False
        obs = (
            f"A secret fraction p/q lies strictly between 0 and 1, is in lowest terms, and its denominator "
            f"satisfies 2 <= q <= {self.q_max}.\n"
            f"Guess a fraction each turn, written a/b, e.g. \\boxed{{3/7}} or \\boxed{{11/20}}. "
            f"Feedback says whether the secret is LARGER or SMALLER than your guess (equal fractions such as "
            f"2/4 and 1/2 count as the same value).\n"
            f"You have {self.guesses} guesses. Success: guess a fraction equal to the secret. "
            f"Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"guesses_left": self._guesses_left, "turn": self._turn, "difficulty": self.difficulty}

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
        m = re.fullmatch(r"\s*(-?\d+)\s*(?:/\s*(\d+))?\s*", text)
        if not m or (m.group(2) is not None and int(m.group(2)) == 0):
            return "Invalid guess. Write a fraction a/b, e.g. \\boxed{5/12}.", -0.05, False
        guess = Fraction(int(m.group(1)), int(m.group(2) or 1))
        if guess == self._secret:
            return f"Correct! The secret fraction is {self._secret}.", 1.0, True
        self._guesses_left -= 1
        if guess < self._secret:
            rel = "LARGER"
            self._low = max(self._low, guess)
        else:
            rel = "SMALLER"
            self._high = min(self._high, guess)
        if self._guesses_left == 0:
            return f"The secret is {rel} than {guess}. No guesses left.", 0.0, True
        return (f"The secret is {rel} than {guess}. It lies strictly between {self._low} and {self._high}. "
                f"Guesses left: {self._guesses_left}."), 0.0, False

    def solution(self):
        # Binary search over the sorted candidate list, guessing the median candidate.
        cands = _candidates(self.q_max)
        lo, hi, moves = 0, len(cands) - 1, []
        while lo <= hi:
            mid = (lo + hi) // 2
            moves.append(f"\\boxed{{{cands[mid].numerator}/{cands[mid].denominator}}}")
            if cands[mid] == self._secret:
                break
            if cands[mid] < self._secret:
                lo = mid + 1
            else:
                hi = mid - 1
        return moves
