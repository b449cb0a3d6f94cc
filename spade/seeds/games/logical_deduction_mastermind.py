"""Crack a hidden colour code from exact/misplaced peg feedback (Mastermind).

skill: Logical Deduction
hint: Keep the list of codes consistent with every feedback so far and always guess one of them. Early guesses with repeated letters (e.g. two letters twice) split the space well; a letter with 0 exact and 0 misplaced is absent.
difficulty: 1-3
turns: multi
"""
import itertools
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_LETTERS = "ABCDEFGHIJ"

# difficulty -> (code length, number of colours, number of guesses)
_LEVELS = {1: (3, 5, 8), 2: (4, 6, 9), 3: (5, 7, 11)}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


def _feedback(guess, secret):
    """(exact, misplaced) peg counts."""
    exact = sum(g == s for g, s in zip(guess, secret))
    common = sum(min(guess.count(c), secret.count(c)) for c in sorted(set(guess)))
    return exact, common - exact


class MastermindEnv:
    def __init__(self, max_turns=20, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.length, self.colours, self.guesses = _LEVELS[difficulty]
        self._alphabet = _LETTERS[:self.colours]
        self._done = True

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self._secret = "".join(self._rng.choice(self._alphabet) for _ in range(self.length))
        self._history = []
        self._turn = 0
        self._done = False
        example = (self._alphabet[0] * 2 + self._alphabet[1] * 2 + self._alphabet[2])[:self.length]
        obs = (
            f"A secret code of {self.length} letters is drawn from {', '.join(self._alphabet)} "
            f"(letters may repeat).\n"
            f"Each turn guess a full code, e.g. \\boxed{{{example}}}. Feedback: EXACT = letters right and in the "
            f"right position; MISPLACED = further letters that occur in the code but in another position "
            f"(each secret letter is matched at most once).\n"
            f"You have {self.guesses} guesses. Success: guess the code exactly. Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"guesses_left": self.guesses - len(self._history), "turn": self._turn,
                "difficulty": self.difficulty}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turn += 1
        obs, reward, terminated = self._play(_content(action).upper())
        truncated = False
        if terminated:
            self._done = True
        elif self._turn >= self.max_turns:
            self._done, truncated, reward = True, True, 0.0
            obs += "\nTurn budget exhausted."
        return obs, reward, terminated, truncated, self._info()

    def _play(self, text):
        guess = re.sub(r"[\s,;\-]", "", text)
        if len(guess) != self.length or any(c not in self._alphabet for c in guess):
            return (f"Invalid guess: write exactly {self.length} letters from {self._alphabet}, "
                    f"e.g. \\boxed{{{self._alphabet[:self.length].ljust(self.length, 'A')}}}."), -0.05, False
        exact, mis = _feedback(guess, self._secret)
        self._history.append(f"{guess} -> exact {exact}, misplaced {mis}")
        if exact == self.length:
            return f"{guess}: all {exact} exact. Code cracked!", 1.0, True
        left = self.guesses - len(self._history)
        board = "\n".join(self._history)
        if left == 0:
            return f"{guess}: exact {exact}, misplaced {mis}. No guesses left.\nHistory:\n{board}", 0.0, True
        return f"{guess}: exact {exact}, misplaced {mis}. Guesses left: {left}.\nHistory:\n{board}", 0.0, False

    def solution(self):
        # Knuth-style opener, then always the first code consistent with all feedback so far.
        cands = ["".join(p) for p in itertools.product(self._alphabet, repeat=self.length)]
        guess = (self._alphabet[0] * 2 + self._alphabet[1] * 2 + self._alphabet[2])[:self.length]
        moves = []
        while True:
            moves.append(f"\\boxed{{{guess}}}")
            fb = _feedback(guess, self._secret)
            if fb[0] == self.length:
                return moves
            cands = [c for c in cands if _feedback(guess, c) == fb]
            guess = cands[0]
