"""Roll a die across a grid so that it stops on the target square with the required face on top.

skill: Spatial Reasoning
hint: Rolling north puts the old south face on top; rolling east puts the old west face on top; opposite faces sum to 7. Four rolls in one direction restore the die, and a detour (e.g. east, north, west, south) changes its orientation without moving it far.
difficulty: 1-3
turns: multi
"""
import random
import re
from collections import deque

MOVES = {"north": (-1, 0), "south": (1, 0), "west": (0, -1), "east": (0, 1)}
ALIASES = {"up": "north", "down": "south", "left": "west", "right": "east", "n": "north", "s": "south", "w": "west", "e": "east"}


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip().lower()


def _roll(die, d):
    """die = (top, north, east); the other faces are 7 minus these."""
    top, north, east = die
    if d == "north":
        return (7 - north, top, east)
    if d == "south":
        return (north, 7 - top, east)
    if d == "east":
        return (7 - east, north, top)
    return (east, north, 7 - top)  # west


class DieRollEnv:
    # grid size, blocked squares, (min, max) shortest solution, target also fixes the north face
    LEVELS = {1: (4, 1, (5, 9), False), 2: (5, 3, (7, 12), False), 3: (6, 5, (9, 16), True)}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _bfs(self, start):
        prev = {start: None}
        queue = deque([start])
        while queue:
            pos, die = cur = queue.popleft()
            for d, (dr, dc) in MOVES.items():
                p = (pos[0] + dr, pos[1] + dc)
                if 0 <= p[0] < self.n and 0 <= p[1] < self.n and p not in self.blocked:
                    nxt = (p, _roll(die, d))
                    if nxt not in prev:
                        prev[nxt] = (cur, d)
                        queue.append(nxt)
        return prev

    def _is_goal(self, state):
        pos, die = state
        return pos == self.target and die[0] == self.want_top and (self.want_north is None or die[1] == self.want_north)

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.n, nblock, (lo, hi), fix_north = self.LEVELS[self.difficulty]
        hi = max(1, min(hi, self.max_turns - 2))
        lo = min(lo, hi)
        cells = [(r, c) for r in range(self.n) for c in range(self.n)]
        while True:
            self.blocked = set(self._rng.sample(cells, nblock))
            free = [x for x in cells if x not in self.blocked]
            self.pos = self._rng.choice(free)
            self.die = (1, 2, 3)
            self.target = self._rng.choice([x for x in free if x != self.pos])
            self.want_top = self._rng.randint(1, 6)
            self.want_north = None
            if fix_north:
                self.want_north = self._rng.choice([f for f in range(1, 7) if f not in (self.want_top, 7 - self.want_top)])
            prev = self._bfs((self.pos, self.die))
            goal = next((st for st in prev if self._is_goal(st)), None)  # dicts keep BFS order
            if goal is not None and lo <= self._path_len(prev, goal) <= hi:
                break
        self.start = (self.pos, self.die)
        self.turn, self.done = 0, False
        goal = f"with {self.want_top} on top" + (f" and {self.want_north} facing north" if self.want_north else "")
        intro = (
            f"A standard die (opposite faces sum to 7) sits on a {self.n}x{self.n} grid. Row 0 is the north "
            "(top) edge, col 0 the west (left) edge. 'D' is the die, 'T' the target, '#' a blocked square.\n"
            "Each turn roll the die one square: \\boxed{north}, \\boxed{south}, \\boxed{east} or \\boxed{west} "
            "(up/down/right/left also work). A roll tips the die over its edge, so the faces turn: rolling north, "
            "the north face goes to the bottom and the south face comes on top.\n"
            f"Goal: stop on T (row {self.target[0]}, col {self.target[1]}) {goal}. Passing over T with the "
            f"wrong face does nothing. You have {self.max_turns} turns. Rolling off the grid or onto '#' is "
            "refused (the turn is used).\n\n"
        )
        return intro + self._render(), {"turn": 0}

    def _render(self):
        rows = []
        for r in range(self.n):
            line = ""
            for c in range(self.n):
                line += "D" if (r, c) == self.pos else "#" if (r, c) in self.blocked else "T" if (r, c) == self.target else "."
            rows.append(line)
        top, north, east = self.die
        return ("\n".join(rows) + f"\nDie at row {self.pos[0]}, col {self.pos[1]}. Faces: top {top}, bottom {7 - top}, "
                f"north {north}, south {7 - north}, east {east}, west {7 - east}. Turns left: {self.max_turns - self.turn}.")

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        cmd = _parse(action)
        cmd = ALIASES.get(cmd, cmd)
        reward, terminated = 0.0, False
        if cmd not in MOVES:
            msg = f"Invalid action '{cmd[:30]}'. Use \\boxed{{north}}, \\boxed{{south}}, \\boxed{{east}} or \\boxed{{west}}."
        else:
            dr, dc = MOVES[cmd]
            p = (self.pos[0] + dr, self.pos[1] + dc)
            if not (0 <= p[0] < self.n and 0 <= p[1] < self.n) or p in self.blocked:
                msg = f"Cannot roll {cmd}: that square is off the grid or blocked."
            else:
                self.pos, self.die = p, _roll(self.die, cmd)
                msg = f"Rolled {cmd}."
                if self._is_goal((self.pos, self.die)):
                    msg += " The die rests on the target with the right orientation. You win!"
                    reward, terminated = 1.0, True
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of turns."
        self.done = terminated or truncated
        return msg + "\n" + self._render(), reward, terminated, truncated, {"turn": self.turn}

    @staticmethod
    def _path_len(prev, st):
        k = 0
        while prev[st] is not None:
            st, k = prev[st][0], k + 1
        return k

    def solution(self):
        prev = self._bfs(self.start)
        st = next(st for st in prev if self._is_goal(st))  # first goal found = a shortest one
        moves = []
        while prev[st] is not None:
            st, d = prev[st]
            moves.append(d)
        return ["\\boxed{%s}" % d for d in reversed(moves)]
