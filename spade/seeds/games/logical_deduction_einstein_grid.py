"""Solve an Einstein-style house puzzle from clues, confirming the answer one house at a time.

skill: Logical Deduction
hint: Draw a grid (houses x attributes). Place the fixed-position clues first, then use "directly left of" and "next to" to narrow the options, and eliminate: each value occupies exactly one house. Submit the houses you are certain of first.
difficulty: 1-3
turns: multi
"""
import itertools
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_ATTRS = [
    ("colour", ["red", "green", "blue", "yellow", "white"]),
    ("pet", ["dog", "cat", "bird", "fish", "horse"]),
    ("drink", ["tea", "coffee", "milk", "juice", "water"]),
    ("job", ["baker", "doctor", "pilot", "artist", "farmer"]),
]

# difficulty -> (houses, attributes, mistakes allowed)
_LEVELS = {1: (3, 3, 3), 2: (4, 3, 2), 3: (5, 4, 2)}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


def _holds(clue, where):
    """Whether a clue holds; where(item) gives the item's house."""
    kind, x, y = clue
    if kind == "at":
        return where(x) == y
    if kind == "not_at":
        return where(x) != y
    if kind == "same":
        return where(x) == where(y)
    if kind == "not_same":
        return where(x) != where(y)
    if kind == "left":
        return where(x) + 1 == where(y)
    if kind == "next":
        return abs(where(x) - where(y)) == 1
    return where(x) < where(y)  # before


class EinsteinGridEnv:
    def __init__(self, max_turns=20, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.houses, self.n_attrs, self.mistakes_allowed = _LEVELS[difficulty]
        self._done = True

    # Items are (attribute index, value index); a solution maps item -> house (0-based).
    def _count(self, clues, limit=2):
        """Number of arrangements satisfying the clues (stops at limit).

        Backtracking over whole attributes (one permutation each) with forward checking: after fixing
        an attribute, every other attribute keeps only the permutations compatible with it.
        """
        A = self.n_attrs
        attrs = lambda c: {c[1][0], c[2][0] if isinstance(c[2], tuple) else c[1][0]}
        assign = {}

        def holds(c):
            return _holds(c, lambda it: assign[it[0]][it[1]])

        def compatible(a, p, group):
            assign[a] = p
            ok = all(holds(c) for c in group)
            del assign[a]
            return ok

        pair = {(a, b): [c for c in clues if attrs(c) == {a, b}] for a in range(A) for b in range(A) if a != b}
        perms = list(itertools.permutations(range(self.houses)))
        cands = {a: [p for p in perms if compatible(a, p, [c for c in clues if attrs(c) == {a}])]
                 for a in range(A)}
        found = [0]

        def search(cands):
            if not cands:
                found[0] += 1
                return found[0] >= limit
            a = min(cands, key=lambda k: (len(cands[k]), k))
            for p in cands[a]:
                assign[a] = p
                rest = {}
                for b in sorted(cands):
                    if b != a:
                        rest[b] = [q for q in cands[b] if compatible(b, q, pair[(a, b)])]
                        if not rest[b]:
                            break
                else:
                    if search(rest):
                        del assign[a]
                        return True
                del assign[a]
            return False

        search(cands)
        return found[0]

    def _random_clue(self, sol):
        rng, N = self._rng, self.houses
        at_house = {h: [it for it, p in sorted(sol.items()) if p == h] for h in range(N)}
        x = rng.choice(sorted(sol))
        kind = rng.choice(["at", "not_at", "same", "same", "not_same", "left", "left", "next", "next", "before"])
        if kind == "at":
            return ("at", x, sol[x])
        if kind == "not_at":
            return ("not_at", x, rng.choice([h for h in range(N) if h != sol[x]]))
        if kind in ("same", "not_same"):
            hs = [sol[x]] if kind == "same" else [h for h in range(N) if h != sol[x]]
            ys = [it for h in hs for it in at_house[h] if it[0] != x[0]]
            return (kind, x, rng.choice(ys))
        h = rng.randrange(N - 1)
        if kind == "before":
            h2 = rng.randrange(h + 1, N)
            return ("before", rng.choice(at_house[h]), rng.choice(at_house[h2]))
        a, b = rng.choice(at_house[h]), rng.choice(at_house[h + 1])
        return ("left", a, b) if kind == "left" else ("next",) + tuple(rng.sample([a, b], 2))

    def _text(self, clue):
        name = lambda it: f"the {_ATTRS[it[0]][0]} {_ATTRS[it[0]][1][it[1]]}"
        kind, x, y = clue
        return {
            "at": lambda: f"{name(x)} is in house {y + 1}.",
            "not_at": lambda: f"{name(x)} is not in house {y + 1}.",
            "same": lambda: f"{name(x)} and {name(y)} are in the same house.",
            "not_same": lambda: f"{name(x)} and {name(y)} are in different houses.",
            "left": lambda: f"{name(x)} is directly left of {name(y)}.",
            "next": lambda: f"{name(x)} is next to {name(y)}.",
            "before": lambda: f"{name(x)} is somewhere left of {name(y)}.",
        }[kind]().capitalize()

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        N, A = self.houses, self.n_attrs
        sol = {}
        for a in range(A):
            perm = list(range(N))
            self._rng.shuffle(perm)
            sol.update({(a, v): perm[v] for v in range(N)})
        clues = []
        while self._count(clues) > 1:
            clues.append(self._random_clue(sol))
        for c in list(clues):  # drop redundant clues
            rest = [d for d in clues if d is not c]
            if self._count(rest) == 1:
                clues = rest
        self._rng.shuffle(clues)
        self._sol, self._clues = sol, clues
        self._confirmed = {}
        self._mistakes = 0
        self._turn = 0
        self._done = False
        attrs = "\n".join(f"  {_ATTRS[a][0]}: {', '.join(_ATTRS[a][1][:N])}" for a in range(A))
        ex = ", ".join(_ATTRS[a][1][(a + 1) % N] for a in range(A))
        obs = (
            f"{N} houses stand in a row, numbered 1 (leftmost) to {N}. Each house has exactly one value of "
            f"each attribute, and no value repeats:\n{attrs}\nClues:\n"
            + "\n".join(f"  {i + 1}. {self._text(c)}" for i, c in enumerate(clues))
            + f"\nThe clues determine a unique arrangement. Submit it one house per turn: the house number, "
            f"a colon, then its {A} values, e.g. \\boxed{{2: {ex}}}.\n"
            f"A correct house is confirmed; a wrong one tells you which of its attributes are wrong and counts "
            f"as a mistake ({self.mistakes_allowed} mistakes = failure). Success: all {N} houses confirmed. "
            f"Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"confirmed": len(self._confirmed), "mistakes": self._mistakes, "turn": self._turn,
                "difficulty": self.difficulty}

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
        N, A = self.houses, self.n_attrs
        m = re.fullmatch(r"(?:house\s*)?(\d+)\s*[:=\-]?\s*(.+)", text, re.DOTALL)
        words = re.findall(r"[a-z]+", m.group(2)) if m else []
        vals = {}
        for w in words:
            for a in range(A):
                if w in _ATTRS[a][1][:N]:
                    vals.setdefault(a, []).append(_ATTRS[a][1].index(w))
        if not m or not 1 <= int(m.group(1)) <= N or sorted(vals) != list(range(A)) \
                or any(len(v) != 1 for v in vals.values()) or len(words) != A:
            return (f"Invalid. Write a house number 1-{N}, a colon and exactly one value of each attribute, "
                    f"e.g. \\boxed{{1: {', '.join(_ATTRS[a][1][0] for a in range(A))}}}."), -0.05, False
        h = int(m.group(1)) - 1
        if h in self._confirmed:
            return f"House {h + 1} is already confirmed.", -0.05, False
        wrong = [_ATTRS[a][0] for a in range(A) if self._sol[(a, vals[a][0])] != h]
        if not wrong:
            self._confirmed[h] = ", ".join(_ATTRS[a][1][vals[a][0]] for a in range(A))
            done = " | ".join(f"{k + 1}: {v}" for k, v in sorted(self._confirmed.items()))
            if len(self._confirmed) == N:
                return f"House {h + 1} confirmed. All houses solved! ({done})", 1.0, True
            return f"House {h + 1} confirmed. Confirmed so far: {done}", 0.0, False
        self._mistakes += 1
        left = self.mistakes_allowed - self._mistakes
        msg = f"House {h + 1} is wrong: {', '.join(wrong)} incorrect."
        if left <= 0:
            return msg + " No mistakes left.", 0.0, True
        return msg + f" Mistakes left: {left}.", 0.0, False

    def solution(self):
        moves = []
        for h in range(self.houses):
            vals = [_ATTRS[a][1][v] for a in range(self.n_attrs) for v in range(self.houses)
                    if self._sol[(a, v)] == h]
            moves.append(f"\\boxed{{{h + 1}: {', '.join(vals)}}}")
        return moves
