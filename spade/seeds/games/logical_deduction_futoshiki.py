"""Solve a Futoshiki (Latin square with inequality signs), submitting the grid row by row.

skill: Logical Deduction
hint: Each row and column holds 1..N once. A cell that must be smaller than a neighbour cannot be N; chains a<b<c force tight bounds (a <= N-2). Place forced values, eliminate them from row and column, repeat; submit rows you are sure of first.
difficulty: 1-3
turns: multi
"""
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)

# difficulty -> (size, givens and signs added back after minimising, mistakes allowed)
_LEVELS = {1: (4, 2, 3, 3), 2: (5, 1, 3, 2), 3: (6, 0, 2, 2)}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


class FutoshikiEnv:
    def __init__(self, max_turns=20, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.n, self._extra_givens, self._extra_signs, self.mistakes_allowed = _LEVELS[difficulty]
        self._done = True

    # A constraint is ("given", (r, c), v) or ("lt", (r1, c1), (r2, c2)) meaning cell1 < cell2.
    def _count(self, cons, limit=2):
        """Number of solutions (stops at limit): constraint propagation plus branching."""
        n = self.n
        cells = [(r, c) for r in range(n) for c in range(n)]
        units = [[(r, c) for c in range(n)] for r in range(n)] + [[(r, c) for r in range(n)] for c in range(n)]
        peers = {x: {y for u in units if x in u for y in u if y != x} for x in cells}
        lts = [(c[1], c[2]) for c in cons if c[0] == "lt"]
        dom = {x: set(range(1, n + 1)) for x in cells}
        for c in cons:
            if c[0] == "given":
                dom[c[1]] &= {c[2]}

        def propagate(dom):
            changed = True
            while changed:
                changed = False
                for a, b in lts:  # a < b
                    if not dom[a] or not dom[b]:
                        return False
                    na = {v for v in dom[a] if v < max(dom[b])}
                    nb = {v for v in dom[b] if v > min(dom[a])}
                    if na != dom[a] or nb != dom[b]:
                        dom[a], dom[b], changed = na, nb, True
                for x in cells:
                    if len(dom[x]) == 1:
                        v = next(iter(dom[x]))
                        for y in peers[x]:
                            if v in dom[y]:
                                dom[y] = dom[y] - {v}
                                changed = True
                    if not dom[x]:
                        return False
                for u in units:  # a digit with a single possible cell in a row/column goes there
                    for v in range(1, n + 1):
                        spots = [x for x in u if v in dom[x]]
                        if not spots:
                            return False
                        if len(spots) == 1 and len(dom[spots[0]]) > 1:
                            dom[spots[0]] = {v}
                            changed = True
            return True

        found = [0]

        def search(dom):
            if not propagate(dom):
                return False
            open_cells = [x for x in cells if len(dom[x]) > 1]
            if not open_cells:
                found[0] += 1
                return found[0] >= limit
            x = min(open_cells, key=lambda y: (len(dom[y]), y))
            for v in sorted(dom[x]):
                trial = dict(dom)
                trial[x] = {v}
                if search(trial):
                    return True
            return False

        search(dom)
        return found[0]

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        n, rng = self.n, self._rng
        rows, cols, syms = list(range(n)), list(range(n)), list(range(1, n + 1))
        rng.shuffle(rows)
        rng.shuffle(cols)
        rng.shuffle(syms)
        sol = [[syms[(rows[r] + cols[c]) % n] for c in range(n)] for r in range(n)]
        ineqs = []
        for r in range(n):
            for c in range(n):
                for r2, c2 in ((r, c + 1), (r + 1, c)):
                    if r2 < n and c2 < n:
                        a, b = (r, c), (r2, c2)
                        ineqs.append(("lt", a, b) if sol[r][c] < sol[r2][c2] else ("lt", b, a))
        givens = [("given", (r, c), sol[r][c]) for r in range(n) for c in range(n)]
        rng.shuffle(ineqs)
        rng.shuffle(givens)
        # Start from every sign, add givens until unique, then drop what is not needed
        # (givens first, so that the signs carry the puzzle).
        cons = list(ineqs)
        pool = list(givens)
        while self._count(cons) > 1:
            cons.append(pool.pop())
        for c in [c for c in cons if c[0] == "given"] + [c for c in cons if c[0] == "lt"]:
            rest = [d for d in cons if d is not c]
            if self._count(rest) == 1:
                cons = rest
        # add a few redundant hints back so the lower levels are gentler
        cons += rng.sample([g for g in givens if g not in cons], self._extra_givens)
        cons += rng.sample([q for q in ineqs if q not in cons], self._extra_signs)
        self._sol, self._cons = sol, cons
        self._given = {c[1]: c[2] for c in cons if c[0] == "given"}
        self._confirmed = {r for r in range(n) if all((r, c) in self._given for c in range(n))}
        self._mistakes = 0
        self._turn = 0
        self._done = False
        ex = " ".join(str(k % n + 1) for k in range(1, n + 1))
        obs = (
            f"Futoshiki {n}x{n}: fill the grid with digits 1-{n} so that every row and every column contains "
            f"each digit exactly once and every sign holds. '<' / '>' compare horizontal neighbours; between "
            f"rows, '^' means the upper cell is SMALLER than the one below, 'v' means it is LARGER. '.' = empty.\n"
            f"{self._board()}\n"
            f"The puzzle has exactly one solution. Submit one whole row per turn: \\boxed{{row 2: {ex}}} "
            f"(row number, colon, the {n} digits left to right). A correct row is locked in; a wrong row tells "
            f"you which columns are wrong and counts as a mistake ({self.mistakes_allowed} mistakes = failure). "
            f"Success: every row locked in. Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _board(self):
        n = self.n
        lt = {(c[1], c[2]) for c in self._cons if c[0] == "lt"}
        lines = []
        for r in range(n):
            cells = []
            for c in range(n):
                v = self._sol[r][c] if (r in self._confirmed or (r, c) in self._given) else "."
                cells.append(str(v))
                if c < n - 1:
                    a, b = (r, c), (r, c + 1)
                    cells.append("<" if (a, b) in lt else ">" if (b, a) in lt else " ")
            lines.append(f"row {r + 1}: " + " ".join(cells) + ("   (locked)" if r in self._confirmed else ""))
            if r < n - 1:
                marks = ["^" if ((r, c), (r + 1, c)) in lt else "v" if ((r + 1, c), (r, c)) in lt else " "
                         for c in range(n)]
                lines.append((" " * 7 + "   ".join(marks)).rstrip())
        return "\n".join(lines)

    def _info(self):
        return {"rows_locked": len(self._confirmed), "mistakes": self._mistakes, "turn": self._turn,
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
        n = self.n
        m = re.fullmatch(r"(?:row\s*)?(\d+)\s*[:=\-]\s*([\d\s,]+)", text)
        digits = [int(d) for d in re.findall(r"\d+", m.group(2))] if m else []
        if not m or not 1 <= int(m.group(1)) <= n or len(digits) != n:
            return (f"Invalid. Write the row number, a colon and {n} digits, e.g. \\boxed{{row 1: "
                    f"{' '.join(str(k + 1) for k in range(n))}}}.\n{self._board()}"), -0.05, False
        r = int(m.group(1)) - 1
        if r in self._confirmed:
            return f"Row {r + 1} is already locked.\n{self._board()}", -0.05, False
        wrong = [str(c + 1) for c in range(n) if digits[c] != self._sol[r][c]]
        if not wrong:
            self._confirmed.add(r)
            if len(self._confirmed) == n:
                return f"Row {r + 1} correct. Puzzle solved!\n{self._board()}", 1.0, True
            return f"Row {r + 1} correct and locked.\n{self._board()}", 0.0, False
        self._mistakes += 1
        left = self.mistakes_allowed - self._mistakes
        msg = f"Row {r + 1} is wrong in column(s) {', '.join(wrong)}."
        if left <= 0:
            return msg + " No mistakes left.", 0.0, True
        return msg + f" Mistakes left: {left}.\n{self._board()}", 0.0, False

    def solution(self):
        return [f"\\boxed{{row {r + 1}: {' '.join(map(str, self._sol[r]))}}}"
                for r in range(self.n) if r not in self._confirmed]
