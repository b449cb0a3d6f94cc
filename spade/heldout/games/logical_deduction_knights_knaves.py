"""Decide who is a truth-telling knight and who is a lying knave from their statements.

skill: Logical Deduction
hint: Assume one speaker is a knight, follow what their statement forces about others, and look for a contradiction; if you find one they are a knave. A knave's statement is false, so negate it rather than ignore it.
difficulty: 1-3
turns: single
"""
import itertools
import random
import re

_NAMES = ["Ada", "Ben", "Cal", "Dee", "Eve"]
# (people, statement kinds allowed, most statements in total)
_LEVELS = {
    1: (3, ["is", "both", "either"], 3),
    2: (4, ["is", "both", "either", "same", "differ"], 5),
    3: (5, ["is", "both", "either", "same", "differ", "count", "ifthen"], 7),
}
_ATTEMPTS = 2


def _truth(st, world):
    kind, a, b = st
    if kind == "is":
        return world[a] == b
    if kind == "both":
        return world[a] and world[b]
    if kind == "either":
        return world[a] or world[b]
    if kind == "same":
        return world[a] == world[b]
    if kind == "differ":
        return world[a] != world[b]
    if kind == "count":
        return sum(world) == a
    return (not world[a]) or (not world[b])  # ifthen: if a is a knight then b is a knave


def _say(st, speaker, n):
    kind, a, b = st
    nm = lambda i: "I" if i == speaker else _NAMES[i]
    if a == speaker and kind in ("both", "either", "same", "differ"):
        a, b = b, a  # say "Ben and I", not "I and Ben"
    if kind == "is":
        return f"{nm(a)} {'am' if a == speaker else 'is'} a {'knight' if b else 'knave'}."
    if kind == "both":
        return f"{nm(a)} and {nm(b)} are both knights."
    if kind == "either":
        return f"At least one of {nm(a)} and {nm(b)} is a knight."
    if kind == "same":
        return f"{nm(a)} and {nm(b)} are the same kind."
    if kind == "differ":
        return f"{nm(a)} and {nm(b)} are different kinds."
    if kind == "count":
        return f"Exactly {a} of us {n} {'is a knight' if a == 1 else 'are knights'}."
    return f"If {nm(a)} {'am' if a == speaker else 'is'} a knight, then {nm(b)} {'am' if b == speaker else 'is'} a knave."


class KnightsKnavesEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _statement(self, n, kinds):
        kind = self._rng.choice(kinds)
        if kind == "count":
            return (kind, self._rng.randint(0, n), None)
        a, b = self._rng.sample(range(n), 2)
        return (kind, a, self._rng.random() < 0.5) if kind == "is" else (kind, a, b)

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        n, kinds, limit = _LEVELS[self.difficulty]
        while True:
            world = [self._rng.random() < 0.5 for _ in range(n)]
            said = []  # (speaker, statement) pairs, each consistent with the true world
            order = list(range(n)) + [self._rng.randrange(n) for _ in range(limit - n)]
            for speaker in order:
                st = self._statement(n, kinds)
                while _truth(st, world) != world[speaker] or (st[0] == "is" and st[1] == speaker):
                    st = self._statement(n, kinds)
                said.append((speaker, st))
                fits = [w for w in itertools.product([True, False], repeat=n)
                        if all(_truth(s, w) == w[sp] for sp, s in said)]
                if len(fits) == 1 and len(said) >= n:  # everyone has spoken and the answer is unique
                    break
            if len(fits) == 1:
                break
        self._world = world
        self.n = n
        self.attempts = _ATTEMPTS
        self.turn = 0
        self.done = False
        names = _NAMES[:n]
        said.sort(key=lambda x: x[0])  # group each speaker's statements (stable sort keeps their order)
        lines = "\n".join(f"{_NAMES[sp]} says: \"{_say(st, sp, n)}\"" for sp, st in said)
        obs = (
            f"On an island every inhabitant is a knight (always tells the truth) or a knave (always lies). "
            f"You meet {n}: {', '.join(names)}.\n{lines}\n"
            f"Exactly one assignment of knights and knaves is consistent with these statements. "
            f"Answer with one letter per person in the order {', '.join(names)}: K for knight, N for knave, "
            "e.g. for two people Ada (knight) and Ben (knave) the reply would be \\boxed{KN}. "
            f"You have {_ATTEMPTS} attempts; after a wrong one you learn how many people you classified correctly. You win by giving the full correct assignment."
        )
        return obs, {"attempts_left": self.attempts}

    def solution(self):
        return ["\\boxed{" + "".join("K" if k else "N" for k in self._world) + "}"]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        words = re.findall(r"[a-z]+", text)
        if words and all(w in ("knight", "knave") for w in words):
            letters = "".join("k" if w == "knight" else "n" for w in words)
        else:
            letters = re.sub(r"[\s,;]", "", text)
        term, reward = False, 0.0
        if not re.fullmatch(r"[kn]{%d}" % self.n, letters):
            obs, reward = f"Give exactly {self.n} letters K/N in the order {', '.join(_NAMES[:self.n])}.", -0.05
        else:
            guess = [c == "k" for c in letters]
            if guess == self._world:
                self.done = True
                return "Correct: every islander is classified. You win!", 1.0, True, False, {"attempts_left": self.attempts - 1}
            self.attempts -= 1
            right = sum(g == w for g, w in zip(guess, self._world))
            obs = f"Wrong: {right} of {self.n} people are classified correctly."
            term = self.attempts <= 0
            obs += " No attempts left. You lose." if term else f" Attempts left: {self.attempts}."
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"attempts_left": self.attempts}
