"""Decide who is a knight (always truthful) and who is a knave (always lies) from their statements.

skill: Logical Deduction
hint: Every speaker's statement is true exactly when the speaker is a knight. Assume one speaker's type, follow what their statement forces on others, and discard the assumption at the first contradiction; counting statements are best checked case by case.
difficulty: 1-3
turns: single
"""
import itertools
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_NAMES = ["Ada", "Ben", "Cleo", "Dov", "Edda", "Finn"]
_ATTEMPTS = 2

# difficulty -> (islanders, statement kinds allowed)
_LEVELS = {
    1: (3, ["is", "same", "diff", "count"]),
    2: (4, ["is", "same", "diff", "count", "atleast", "someknave"]),
    3: (5, ["is", "same", "diff", "count", "atleast", "someknave", "implies"]),
}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


def _truth(stmt, t):
    kind, a, b = stmt
    if kind == "is":
        return t[a] == b
    if kind == "same":
        return t[a] == t[b]
    if kind == "diff":
        return t[a] != t[b]
    if kind == "count":
        return sum(t) == a
    if kind == "atleast":
        return sum(t) >= a
    if kind == "someknave":
        return not (t[a] and t[b])
    return (not t[a]) or t[b]  # implies: if a is a knight then b is a knight


class KnightsKnavesEnv:
    def __init__(self, max_turns=10, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.n, self._kinds = _LEVELS[difficulty]
        self._names = _NAMES[:self.n]
        self._done = True

    def _random_statement(self, speaker):
        rng, n = self._rng, self.n
        kind = rng.choice(self._kinds)
        others = [i for i in range(n) if i != speaker]
        if kind == "is":
            return (kind, rng.choice(others), rng.random() < 0.5)
        if kind in ("count", "atleast"):
            return (kind, rng.randint(1, n - 1), None)
        a, b = rng.sample(range(n), 2)
        return (kind, a, b)

    def _say(self, speaker, stmt):
        kind, a, b = stmt
        subj = lambda i: "I" if i == speaker else self._names[i]
        obj = lambda i: "me" if i == speaker else self._names[i]
        verb = lambda i: "am" if i == speaker else "is"
        if kind == "is":
            return f"{subj(a)} {verb(a)} a {'knight' if b else 'knave'}."
        if kind in ("same", "diff"):
            return f"{subj(a)} and {obj(b)} are {'the same kind' if kind == 'same' else 'different kinds'}."
        if kind in ("count", "atleast"):
            who = "is a knight" if a == 1 else "are knights"
            return f"{'Exactly' if kind == 'count' else 'At least'} {a} of us {self.n} {who}."
        if kind == "someknave":
            return f"At least one of {obj(a)} and {obj(b)} is a knave."
        return f"If {subj(a)} {verb(a)} a knight, then {subj(b)} {verb(b)} a knight."

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        while True:
            truth = tuple(self._rng.random() < 0.5 for _ in range(self.n))
            stmts = []
            for i in range(self.n):
                while True:
                    s = self._random_statement(i)
                    if _truth(s, truth) == truth[i]:
                        break
                stmts.append(s)
            sols = [t for t in itertools.product([True, False], repeat=self.n)
                    if all(_truth(s, t) == t[i] for i, s in enumerate(stmts))]
            if len(sols) == 1:
                break
        self._truth, self._stmts = truth, stmts
        self._attempts = _ATTEMPTS
        self._turn = 0
        self._done = False
        lines = "\n".join(f"  {self._names[i]}: \"{self._say(i, s)}\"" for i, s in enumerate(stmts))
        ex = ("KNNK" * 2)[:self.n + 1]  # deliberately one letter too long: a format example only
        obs = (
            f"On this island every inhabitant is a KNIGHT (every statement they make is true) or a KNAVE "
            f"(every statement they make is false). You meet {self.n}: {', '.join(self._names)}.\n"
            f"{lines}\nExactly one assignment of types is consistent with these statements.\n"
            f"Answer with one letter per person in the order listed (K = knight, N = knave); with "
            f"{self.n + 1} people an answer would look like \\boxed{{{ex}}}.\n"
            f"You have {_ATTEMPTS} attempts; a wrong answer tells you how many people you classified correctly. "
            f"Success: every type correct. Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"attempts_left": self._attempts, "turn": self._turn, "difficulty": self.difficulty}

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
        words = re.findall(r"[A-Z]+", text)
        if len(words) == self.n and all(w.startswith(("KNIGHT", "KNAVE")) for w in words):
            letters = "".join("K" if w.startswith("KNIGHT") else "N" for w in words)
        else:
            letters = "".join(words)
        if len(letters) != self.n or set(letters) - {"K", "N"}:
            return (f"Invalid answer: give exactly {self.n} letters K/N in the order "
                    f"{', '.join(self._names)} (K = knight, N = knave)."), -0.05, False
        guess = tuple(c == "K" for c in letters)
        if guess == self._truth:
            return "Correct! Everyone is classified correctly.", 1.0, True
        self._attempts -= 1
        right = sum(g == t for g, t in zip(guess, self._truth))
        msg = f"Wrong: {right} of {self.n} people classified correctly."
        if self._attempts == 0:
            return msg + " No attempts left.", 0.0, True
        return msg + f" Attempts left: {self._attempts}.", 0.0, False

    def solution(self):
        return ["\\boxed{" + "".join("K" if x else "N" for x in self._truth) + "}"]
