"""Solve a scrambled 3x3 sliding-tile puzzle by sliding tiles into the blank, one per turn.

skill: Spatial Reasoning
hint: Work in order: place tiles 1-2-3 in the top row first, then 4 and 7 down the left column, then rotate the last 2x2 block. Move a tile by walking the blank around it; avoid undoing your previous move.
difficulty: 1-3
turns: multi
"""
import random
import re
from collections import deque

GOAL = (1, 2, 3, 4, 5, 6, 7, 8, 0)  # 0 is the blank


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip().lower()


def _neighbours(i):
    r, c = divmod(i, 3)
    out = []
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        if 0 <= r + dr < 3 and 0 <= c + dc < 3:
            out.append((r + dr) * 3 + c + dc)
    return out


def _slide(state, tile):
    """Slide `tile` into the blank; returns the new state or None if not adjacent."""
    b, t = state.index(0), state.index(tile)
    if t not in _neighbours(b):
        return None
    s = list(state)
    s[b], s[t] = tile, 0
    return tuple(s)


class SlidingTilesEnv:
    DEPTH = {1: (6, 8), 2: (10, 12), 3: (14, 16)}  # optimal solution length range

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _search(self, hi):
        """BFS outward from the goal; parent[s] is the tile to slide in s to get one step closer."""
        parent, dist = {GOAL: None}, {GOAL: 0}
        queue = deque([GOAL])
        while queue:
            s = queue.popleft()
            if dist[s] == hi:
                continue
            b = s.index(0)
            for t in _neighbours(b):
                nxt = _slide(s, s[t])
                if nxt not in dist:
                    dist[nxt] = dist[s] + 1
                    parent[nxt] = s[t]  # sliding that tile back in `nxt` returns to `s`
                    queue.append(nxt)
        return parent, dist

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        lo, hi = self.DEPTH[self.difficulty]
        hi = max(1, min(hi, self.max_turns - 1))
        lo = min(lo, hi)
        self._parent, dist = self._search(hi)
        pool = sorted(s for s, k in dist.items() if lo <= k <= hi)
        self.start = self._rng.choice(pool)
        self.state, self.turn, self.moves, self.done = self.start, 0, 0, False
        intro = (
            "Sliding-tile puzzle on a 3x3 board ('_' is the blank). Goal layout:\n"
            + self._board(GOAL)
            + "\nEach turn, slide one tile that is next to the blank (up/down/left/right, not diagonal) "
            "into the blank by writing its number, e.g. \\boxed{5}.\n"
            f"You have {self.max_turns} turns; invalid moves still use a turn. "
            "Success = the board matches the goal layout.\n\nCurrent board:\n"
        )
        return intro + self._status(), {"turn": 0}

    @staticmethod
    def _board(s):
        return "\n".join(" ".join(str(x) if x else "_" for x in s[r * 3:r * 3 + 3]) for r in range(3))

    def _status(self):
        movable = sorted(self.state[i] for i in _neighbours(self.state.index(0)))
        return (self._board(self.state) + f"\nMovable tiles: {', '.join(map(str, movable))}. "
                f"Moves made: {self.moves}. Turns left: {self.max_turns - self.turn}.")

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        cmd = _parse(action)
        reward, terminated = 0.0, False
        if not re.fullmatch(r"[1-8]", cmd):
            msg = f"Invalid action '{cmd[:30]}'. Write a single tile number 1-8, e.g. \\boxed{{5}}."
        else:
            nxt = _slide(self.state, int(cmd))
            if nxt is None:
                msg = f"Tile {cmd} is not next to the blank, so it cannot slide."
            else:
                self.state, self.moves = nxt, self.moves + 1
                msg = f"Slid tile {cmd}."
                if self.state == GOAL:
                    msg += " The puzzle is solved. You win!"
                    reward, terminated = 1.0, True
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of turns."
        self.done = terminated or truncated
        return msg + "\n" + self._status(), reward, terminated, truncated, {"turn": self.turn, "moves": self.moves}

    def solution(self):
        out, s = [], self.start
        while s != GOAL:
            tile = self._parent[s]
            out.append("\\boxed{%d}" % tile)
            s = _slide(s, tile)
        return out
