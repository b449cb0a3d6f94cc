"""Roll a die across a grid so that it reaches the target square with a given face on top.

skill: Spatial Reasoning
hint: Opposite faces sum to 7. Rolling north puts the old south face on top (east/west faces stay put); rolling east puts the old west face on top. Two rolls in the same direction turn the top face upside down; a detour east-north-west-south changes the top without moving you.
difficulty: 1-3
turns: multi
"""
import random
import re
from collections import deque

# (rows, cols, blocked cells, (min, max) optimal rolls, slack rolls)
_LEVELS = {1: (4, 4, 1, (4, 6), 4), 2: (5, 5, 3, (6, 9), 2), 3: (6, 6, 6, (9, 12), 0)}
_DIRS = {"n": (-1, 0), "s": (1, 0), "e": (0, 1), "w": (0, -1)}
_WORD = {"n": "north", "s": "south", "e": "east", "w": "west"}


def _roll(die, d):
    """die = (top, north, east); the other faces are 7 minus these."""
    t, n, e = die
    if d == "n":
        return (7 - n, t, e)
    if d == "s":
        return (n, 7 - t, e)
    if d == "e":
        return (7 - e, n, t)
    return (e, n, 7 - t)


class RollingDieEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _bfs(self, start, die):
        """Shortest roll sequences from (start, die) to every reachable (cell, die) state."""
        first = (start, die)
        parent = {first: None}
        queue = deque([first])
        while queue:
            (r, c), dd = state = queue.popleft()
            for d, (dr, dc) in _DIRS.items():
                cell = (r + dr, c + dc)
                if 0 <= cell[0] < self.rows and 0 <= cell[1] < self.cols and cell not in self.blocked:
                    nxt = (cell, _roll(dd, d))
                    if nxt not in parent:
                        parent[nxt] = (state, d)
                        queue.append(nxt)
        return parent

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.rows, self.cols, nblock, (lo, hi), slack = _LEVELS[self.difficulty]
        cells = [(r, c) for r in range(self.rows) for c in range(self.cols)]
        while True:
            self.blocked = set(self._rng.sample(cells, nblock))
            free = [x for x in cells if x not in self.blocked]
            self.pos = self._rng.choice(free)
            self.die = (1, 2, 3)
            parent = self._bfs(self.pos, self.die)
            best = {}  # (cell, top) -> path length of the first (shortest) state found
            for state in parent:  # dict order is BFS order, so the first hit is the shortest
                key = (state[0], state[1][0])
                if key not in best:
                    n, s = 0, state
                    while parent[s] is not None:
                        s, n = parent[s][0], n + 1
                    best[key] = (n, state)
            goals = sorted(k for k, (n, _) in best.items() if lo <= n <= hi)
            if goals:
                break
        (self.target, self.face) = self._rng.choice(goals)
        plan, s = [], best[(self.target, self.face)][1]
        while parent[s] is not None:
            s, d = parent[s]
            plan.append(d)
        self._plan = plan[::-1]
        self.budget = min(len(self._plan) + slack, self.max_turns)
        self.used = 0
        self.turn = 0
        self.done = False
        obs = (
            f"A standard die (opposite faces sum to 7) sits on a {self.rows}x{self.cols} board. Row 1 is the north edge, "
            "column 1 the west edge.\nEach reply rolls the die one square over an edge: \\boxed{north}, \\boxed{south}, "
            "\\boxed{east} or \\boxed{west} (or n/s/e/w). It cannot roll off the board or onto '#' squares.\n"
            f"Goal: stop on the square marked T with {self.face} on top. You win the moment that happens.\n"
            f"You may roll at most {self.budget} times (blocked rolls do not count; you have {self.max_turns} turns).\n"
            f"{self._show()}"
        )
        return obs, {"rolls_left": self.budget}

    def _show(self):
        lines = []
        for r in range(self.rows):
            row = ""
            for c in range(self.cols):
                row += "D" if (r, c) == self.pos else "T" if (r, c) == self.target else "#" if (r, c) in self.blocked else "."
            lines.append(row)
        t, n, e = self.die
        return ("\n".join(lines) + f"\nDie D at row {self.pos[0] + 1}, column {self.pos[1] + 1}: top={t}, "
                f"north face={n}, east face={e} (bottom={7 - t}, south={7 - n}, west={7 - e}). "
                f"Target T at row {self.target[0] + 1}, column {self.target[1] + 1}, needs {self.face} on top.")

    def solution(self):
        return [f"\\boxed{{{_WORD[d]}}}" for d in self._plan]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        d = text[0] if text in ("n", "s", "e", "w", "north", "south", "east", "west") else None
        term, reward = False, 0.0
        if d is None:
            obs, reward = "Unrecognised action. Reply with north, south, east or west.", -0.05
        else:
            r, c = self.pos[0] + _DIRS[d][0], self.pos[1] + _DIRS[d][1]
            if not (0 <= r < self.rows and 0 <= c < self.cols) or (r, c) in self.blocked:
                obs = f"Cannot roll {_WORD[d]}: that is off the board or blocked.\n{self._show()}"
            else:
                self.pos, self.die = (r, c), _roll(self.die, d)
                self.used += 1
                left = self.budget - self.used
                if self.pos == self.target and self.die[0] == self.face:
                    self.done = True
                    return f"Rolled {_WORD[d]}: the die rests on T with {self.face} on top. You win!", 1.0, True, False, {"rolls_left": left}
                obs = f"Rolled {_WORD[d]}.\n{self._show()}\nRolls left: {left}."
                if left <= 0:
                    term = True
                    obs += " Out of rolls. You lose."
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"rolls_left": self.budget - self.used}
