"""Find the exit of a fog-covered maze while seeing only the walls right around you.

skill: Spatial Reasoning
hint: Keep a mental map of every corridor you have seen. Read the map before moving: never walk into a '#'. Prefer openings that head toward the exit's row/column, and when a corridor dead-ends, backtrack to the last unexplored opening instead of wandering.
difficulty: 1-3
turns: multi
"""
import random
import re
from collections import deque

DIRS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}
ALIASES = {"north": "up", "south": "down", "west": "left", "east": "right"}


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip().lower()


class FogMazeEnv:
    SIZE = {1: 5, 2: 6, 3: 7}           # maze is SIZE x SIZE cells
    PATH = {1: (8, 12), 2: (12, 17), 3: (16, 22)}  # shortest start->exit length
    VIEW = {1: 1, 2: 0, 3: 0}           # extra cells of visibility around you
    MAX_BUMPS = 3

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.n = self.SIZE[difficulty]

    # ----- maze generation -------------------------------------------------
    def _neighbours(self, cell):
        r, c = cell
        for d, (dr, dc) in DIRS.items():
            if 0 <= r + dr < self.n and 0 <= c + dc < self.n:
                yield d, (r + dr, c + dc)

    def _carve(self):
        """Depth-first backtracker: a perfect maze (one path between any two cells)."""
        opened = {(r, c): [] for r in range(self.n) for c in range(self.n)}
        start = (0, 0)
        stack, seen = [start], {start}
        while stack:
            cur = stack[-1]
            options = [(d, nb) for d, nb in self._neighbours(cur) if nb not in seen]
            if not options:
                stack.pop()
                continue
            d, nb = self._rng.choice(options)
            opened[cur].append(d)
            opened[nb].append(OPPOSITE[d])
            seen.add(nb)
            stack.append(nb)
        return opened

    def _bfs(self, src):
        prev = {src: None}
        queue = deque([src])
        while queue:
            cur = queue.popleft()
            for d, nb in self._neighbours(cur):
                if d in self._open[cur] and nb not in prev:
                    prev[nb] = (cur, d)
                    queue.append(nb)
        return prev

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        lo, hi = self.PATH[self.difficulty]
        hi = max(1, min(hi, self.max_turns - 2))
        lo = min(lo, hi)
        while True:
            self._open = self._carve()
            self.start = (self._rng.randrange(self.n), self._rng.randrange(self.n))
            prev = self._bfs(self.start)
            dist = {}
            for cell in prev:
                k, cur = 0, cell
                while prev[cur] is not None:
                    cur, k = prev[cur][0], k + 1
                dist[cell] = k
            goals = sorted(c for c, k in dist.items() if lo <= k <= hi)
            if goals:
                self.goal = self._rng.choice(goals)
                break
        self.pos, self.turn, self.bumps, self.done = self.start, 0, 0, False
        size = 2 * self.n + 1
        self._seen = [[False] * size for _ in range(size)]
        self._reveal()
        intro = (
            f"You are '@' in a {self.n}x{self.n} maze covered in fog. Reach the exit 'G' at "
            f"row {self.goal[0]}, col {self.goal[1]} (you start at row {self.start[0]}, col {self.start[1]}; "
            "row 0 is the top, col 0 the left).\n"
            "Map legend: '#' wall, '.' open floor, '?' not yet seen. Each cell is drawn at odd map "
            "coordinates; the characters between cells show whether a wall separates them.\n"
            "You only see the walls around your current cell"
            + (" and its neighbours" if self.VIEW[self.difficulty] else "")
            + "; the map keeps what you have seen.\n"
            "Each turn move one cell: \\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right} "
            "(north/south/west/east also work).\n"
            f"Walking into a wall is a bump; {self.MAX_BUMPS} bumps and you lose. You have "
            f"{self.max_turns} turns. Success = standing on G.\n\n"
        )
        return intro + self._render(), {"turn": 0, "bumps": 0}

    # ----- observation ------------------------------------------------------
    def _reveal(self):
        r, c = 2 * self.pos[0] + 1, 2 * self.pos[1] + 1
        k = 2 * self.VIEW[self.difficulty] + 1
        size = 2 * self.n + 1
        for i in range(max(0, r - k), min(size, r + k + 1)):
            for j in range(max(0, c - k), min(size, c + k + 1)):
                self._seen[i][j] = True

    def _char(self, i, j):
        if (i, j) == (2 * self.pos[0] + 1, 2 * self.pos[1] + 1):
            return "@"
        if (i, j) == (2 * self.goal[0] + 1, 2 * self.goal[1] + 1):
            return "G"
        if not self._seen[i][j]:
            return "?"
        if i % 2 == 1 and j % 2 == 1:
            return "."
        if i % 2 == 1 and j % 2 == 0 and 0 < j < 2 * self.n:  # wall between two cells in a row
            return "." if "right" in self._open[((i - 1) // 2, j // 2 - 1)] else "#"
        if i % 2 == 0 and j % 2 == 1 and 0 < i < 2 * self.n:  # wall between two cells in a column
            return "." if "down" in self._open[(i // 2 - 1, (j - 1) // 2)] else "#"
        return "#"

    def _render(self):
        size = 2 * self.n + 1
        rows = ["".join(self._char(i, j) for j in range(size)) for i in range(size)]
        exits = [d for d in DIRS if d in self._open[self.pos]]
        return ("\n".join(rows) + f"\nYou are at row {self.pos[0]}, col {self.pos[1]}. Open directions: "
                + ", ".join(exits) + f". Turns left: {self.max_turns - self.turn}, bumps: {self.bumps}/{self.MAX_BUMPS}.")

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        cmd = _parse(action)
        cmd = ALIASES.get(cmd, cmd)
        reward, terminated = 0.0, False
        if cmd not in DIRS:
            msg = f"Invalid action '{cmd[:30]}'. Use \\boxed{{up}}, \\boxed{{down}}, \\boxed{{left}} or \\boxed{{right}}."
        elif cmd not in self._open[self.pos]:
            self.bumps += 1
            msg = f"Bump! There is a wall {cmd} of you ({self.bumps}/{self.MAX_BUMPS} bumps)."
            if self.bumps >= self.MAX_BUMPS:
                msg += " Too many bumps: you are lost in the fog. You lose."
                terminated = True
        else:
            dr, dc = DIRS[cmd]
            self.pos = (self.pos[0] + dr, self.pos[1] + dc)
            self._reveal()
            msg = f"You moved {cmd}."
            if self.pos == self.goal:
                msg += " You reached the exit. You win!"
                reward, terminated = 1.0, True
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of turns."
        self.done = terminated or truncated
        info = {"turn": self.turn, "bumps": self.bumps, "position": list(self.pos)}
        return msg + "\n" + self._render(), reward, terminated, truncated, info

    def solution(self):
        prev = self._bfs(self.start)
        moves, cur = [], self.goal
        while prev[cur] is not None:
            cur, d = prev[cur]
            moves.append(d)
        return ["\\boxed{%s}" % d for d in reversed(moves)]
