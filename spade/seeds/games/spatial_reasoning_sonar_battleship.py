"""Sink hidden ships on a grid using hit/miss shots whose misses report sonar distance to the nearest ship.

skill: Spatial Reasoning
hint: A miss reporting distance d means every cell at Manhattan distance < d is empty and some ship cell lies exactly d away: intersect those diamonds from two or three misses. After a hit, fire along the same row or column until the ship sinks.
difficulty: 1-3
turns: multi
"""
import random
import re

LETTERS = "ABCDEFGHIJ"


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip().upper()


class SonarBattleshipEnv:
    SIZE = {1: 7, 2: 8, 3: 10}
    SHIPS = {1: [3, 2], 2: [4, 3, 2], 3: [4, 3, 3, 2]}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.n = self.SIZE[difficulty]

    def _place(self):
        """Place ships horizontally/vertically; ships never touch, not even diagonally."""
        while True:
            ships, taken = [], set()
            for length in self.SHIPS[self.difficulty]:
                for _ in range(200):
                    horiz = self._rng.random() < 0.5
                    r = self._rng.randrange(self.n - (0 if horiz else length - 1))
                    c = self._rng.randrange(self.n - (length - 1 if horiz else 0))
                    cells = [(r, c + k) if horiz else (r + k, c) for k in range(length)]
                    halo = {(a + da, b + db) for a, b in cells for da in (-1, 0, 1) for db in (-1, 0, 1)}
                    if not halo & taken:
                        ships.append(cells)
                        taken |= set(cells)
                        break
                else:
                    break
            if len(ships) == len(self.SHIPS[self.difficulty]):
                return ships

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.ships = self._place()
        self.hits, self.fired = set(), {}
        self.turn, self.done = 0, False
        n = self.n
        lengths = ", ".join(str(k) for k in self.SHIPS[self.difficulty])
        intro = (
            f"Sonar Battleship on a {n}x{n} grid: columns A-{LETTERS[n - 1]} (left to right), rows 1-{n} "
            f"(top to bottom). Hidden ships of lengths {lengths} lie straight (horizontal or vertical) and "
            "never touch each other, not even diagonally.\n"
            "Each turn fire at one cell, e.g. \\boxed{C4} or \\boxed{A1}. A hit is reported as HIT (or SUNK "
            "when a ship's last cell is hit). A miss reports the Manhattan distance (|row diff| + |col diff|) "
            "from your shot to the nearest ship cell that has not been hit yet.\n"
            f"You have {self.max_turns} shots/turns. Success = sink every ship.\n\n" + self._render()
        )
        return intro, {"turn": 0}

    def _render(self):
        head = "   " + "".join(f"{x:>3}" for x in LETTERS[:self.n])
        rows = [head]
        for r in range(self.n):
            marks = []
            for c in range(self.n):
                mark = self.fired.get((r, c))
                marks.append("X" if mark == "hit" else ("." if mark is None else str(mark)))
            rows.append(f"{r + 1:>2} " + "".join(f"{x:>3}" for x in marks))
        sunk = sum(all(cell in self.hits for cell in ship) for ship in self.ships)
        return ("\n".join(rows) + "\n(X = hit, digit = miss with its sonar distance, . = not fired)\n"
                f"Ships sunk: {sunk}/{len(self.ships)}. Turns left: {self.max_turns - self.turn}.")

    def _coords(self, cmd):
        m = re.fullmatch(r"([A-J])\s*,?\s*(\d{1,2})", cmd)
        if not m:
            return None
        c, r = LETTERS.index(m.group(1)), int(m.group(2)) - 1
        return (r, c) if 0 <= r < self.n and c < self.n else None

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"turn": self.turn}
        self.turn += 1
        cmd = _parse(action)
        cell = self._coords(cmd)
        reward, terminated = 0.0, False
        if cell is None:
            msg = (f"Invalid target '{cmd[:30]}'. Write a column letter A-{LETTERS[self.n - 1]} followed by "
                   f"a row 1-{self.n}, e.g. \\boxed{{B3}}.")
        elif cell in self.fired:
            msg = f"You already fired at {cmd}; that shot is wasted."
        else:
            ship = next((s for s in self.ships if cell in s), None)
            if ship is not None:
                self.hits.add(cell)
                self.fired[cell] = "hit"
                if all(x in self.hits for x in ship):
                    msg = f"{cmd}: SUNK! You sank a ship of length {len(ship)}."
                else:
                    msg = f"{cmd}: HIT!"
            else:
                left = [x for s in self.ships for x in s if x not in self.hits]
                d = min(abs(cell[0] - a) + abs(cell[1] - b) for a, b in left)
                self.fired[cell] = d
                msg = f"{cmd}: MISS. Nearest unhit ship cell is at distance {d}."
            if all(x in self.hits for s in self.ships for x in s):
                msg += " Every ship is sunk. You win!"
                reward, terminated = 1.0, True
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of shots."
        self.done = terminated or truncated
        return msg + "\n" + self._render(), reward, terminated, truncated, {"turn": self.turn, "hits": len(self.hits)}

    def solution(self):
        # Privileged play: fire at every ship cell, ship by ship, end to end.
        return ["\\boxed{%s%d}" % (LETTERS[c], r + 1) for ship in self.ships for r, c in ship]
