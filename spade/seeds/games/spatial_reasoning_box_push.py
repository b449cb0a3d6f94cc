"""Push boxes onto target squares in a tiny Sokoban warehouse, one step per turn.

skill: Spatial Reasoning
hint: Plan backwards from each target: to push a box in a direction you must stand on the opposite side of it. Never push a box into a corner or against a wall unless that square is a target, since boxes cannot be pulled. Walk around a box to reach its other side.
difficulty: 1-3
turns: multi
"""
import random
import re
from collections import deque

DIRS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
ALIASES = {"north": "up", "south": "down", "west": "left", "east": "right", "u": "up", "d": "down", "l": "left", "r": "right"}


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip().lower()


class BoxPushEnv:
    # interior size, number of boxes, interior walls, (min, max) optimal moves, min pushes
    LEVELS = {1: (5, 1, 3, (8, 14), 2), 2: (6, 1, 5, (12, 18), 4), 3: (6, 2, 4, (14, 22), 5)}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    @staticmethod
    def _move(walls, player, boxes, d):
        """Apply one move; returns (player, boxes, pushed) or None if blocked."""
        dr, dc = DIRS[d]
        nxt = (player[0] + dr, player[1] + dc)
        if nxt in walls:
            return None
        if nxt in boxes:
            beyond = (nxt[0] + dr, nxt[1] + dc)
            if beyond in walls or beyond in boxes:
                return None
            return nxt, tuple(sorted(beyond if b == nxt else b for b in boxes)), True
        return nxt, boxes, False

    def _solve(self, player, boxes, limit):
        start = (player, boxes)
        prev = {start: None}
        queue = deque([(start, 0)])
        while queue:
            (p, bx), k = queue.popleft()
            if bx == self.targets:
                path, cur = [], (p, bx)
                while prev[cur] is not None:
                    cur, d = prev[cur]
                    path.append(d)
                return path[::-1]
            if k == limit:
                continue
            for d in DIRS:
                res = self._move(self.walls, p, bx, d)
                if res and (res[0], res[1]) not in prev:
                    prev[(res[0], res[1])] = ((p, bx), d)
                    queue.append(((res[0], res[1]), k + 1))
        return None

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        size, nbox, nwall, (lo, hi), min_push = self.LEVELS[self.difficulty]
        hi = max(1, min(hi, self.max_turns - 2))
        lo = min(lo, hi)
        self.size = size + 2
        inner = [(r, c) for r in range(1, size + 1) for c in range(1, size + 1)]
        border = {(r, c) for r in range(self.size) for c in range(self.size)} - set(inner)
        while True:
            self.walls = border | set(self._rng.sample(inner, nwall))
            floor = [x for x in inner if x not in self.walls]
            self.targets = tuple(sorted(self._rng.sample(floor, nbox)))
            # Reverse play from the solved position: random walks that sometimes pull a box.
            boxes = list(self.targets)
            player = self._rng.choice([x for x in floor if x not in boxes])
            for _ in range(60):
                d = self._rng.choice(list(DIRS))
                dr, dc = DIRS[d]
                nxt, behind = (player[0] + dr, player[1] + dc), (player[0] - dr, player[1] - dc)
                if nxt in self.walls or nxt in boxes:
                    continue
                if behind in boxes and self._rng.random() < 0.7:
                    boxes[boxes.index(behind)] = player
                player = nxt
            boxes = tuple(sorted(boxes))
            if boxes == self.targets:
                continue
            path = self._solve(player, boxes, hi)
            if path and len(path) >= lo:
                pushes = sum(self._replay(player, boxes, path))
                if pushes >= min_push:
                    break
        self.start = (player, boxes)
        self.player, self.boxes = player, boxes
        self.turn, self.done = 0, False
        intro = (
            f"Box pushing (Sokoban). Legend: '#' wall, '-' floor, '@' you, '$' box, '.' target, "
            "'*' box on a target, '+' you on a target. Row 0 is the top.\n"
            f"Push {'the box onto the target' if nbox == 1 else 'every box onto a target'}. Each turn move "
            "one step: \\boxed{up}, \\boxed{down}, \\boxed{left} or \\boxed{right}. Walking into a box pushes "
            "it one square if the square beyond is free; you cannot pull boxes or push two at once.\n"
            "\\boxed{restart} puts everything back to the start (it costs a turn).\n"
            f"You have {self.max_turns} turns. Success = all boxes on targets.\n\n"
        )
        return intro + self._render(), {"turn": 0}

    def _replay(self, player, boxes, path):
        pushed = []
        for d in path:
            player, boxes, p = self._move(self.walls, player, boxes, d)
            pushed.append(p)
        return pushed

    def _render(self):
        rows = []
        for r in range(self.size):
            line = ""
            for c in range(self.size):
                x, on_t = (r, c), (r, c) in self.targets
                if x in self.walls:
                    line += "#"
                elif x == self.player:
                    line += "+" if on_t else "@"
                elif x in self.boxes:
                    line += "*" if on_t else "$"
                else:
                    line += "." if on_t else "-"
            rows.append(line)
        placed = sum(b in self.targets for b in self.boxes)
        return ("\n".join(rows) + f"\nYou are at row {self.player[0]}, col {self.player[1]}. Boxes on target: "
                f"{placed}/{len(self.targets)}. Turns left: {self.max_turns - self.turn}.")

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        cmd = _parse(action)
        cmd = ALIASES.get(cmd, cmd)
        reward, terminated = 0.0, False
        if cmd == "restart":
            self.player, self.boxes = self.start
            msg = "Board restored to the starting position."
        elif cmd not in DIRS:
            msg = f"Invalid action '{cmd[:30]}'. Use \\boxed{{up}}, \\boxed{{down}}, \\boxed{{left}}, \\boxed{{right}} or \\boxed{{restart}}."
        else:
            res = self._move(self.walls, self.player, self.boxes, cmd)
            if res is None:
                msg = f"Blocked: you cannot move {cmd} (wall, or a box that cannot be pushed)."
            else:
                self.player, self.boxes, pushed = res
                msg = f"You moved {cmd}" + (" and pushed a box." if pushed else ".")
                if self.boxes == self.targets:
                    msg += " All boxes are on targets. You win!"
                    reward, terminated = 1.0, True
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of turns."
        self.done = terminated or truncated
        return msg + "\n" + self._render(), reward, terminated, truncated, {"turn": self.turn}

    def solution(self):
        path = self._solve(self.start[0], self.start[1], self.max_turns)
        return ["\\boxed{%s}" % d for d in path]
