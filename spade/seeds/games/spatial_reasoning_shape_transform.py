"""Apply a chain of rotations, reflections and translations to a grid shape and list its final cells.

skill: Spatial Reasoning
hint: Transform the coordinates, not the picture: rotating 90 degrees clockwise about the origin maps (x, y) to (y, -x), counter-clockwise to (-y, x); a mirror flips the sign of one coordinate. For a pivot, subtract it, rotate, add it back. Apply the steps in the given order.
difficulty: 1-3
turns: single
"""
import random
import re

OPS = {
    "rot_cw": ("rotate 90 degrees clockwise about the origin (0, 0)", lambda x, y: (y, -x)),
    "rot_ccw": ("rotate 90 degrees counter-clockwise about the origin (0, 0)", lambda x, y: (-y, x)),
    "rot_180": ("rotate 180 degrees about the origin (0, 0)", lambda x, y: (-x, -y)),
    "mirror_x": ("reflect across the y-axis (x becomes -x)", lambda x, y: (-x, y)),
    "mirror_y": ("reflect across the x-axis (y becomes -y)", lambda x, y: (x, -y)),
    "diag": ("reflect across the line y = x (swap x and y)", lambda x, y: (y, x)),
}


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip()


class ShapeTransformEnv:
    # shape cells, number of transformation steps, allowed op kinds, attempts
    LEVELS = {
        1: (4, 2, ["rot_cw", "rot_ccw", "mirror_x", "mirror_y", "shift"], 3),
        2: (5, 3, ["rot_cw", "rot_ccw", "rot_180", "mirror_x", "mirror_y", "shift"], 3),
        3: (6, 4, ["rot_cw", "rot_ccw", "rot_180", "mirror_x", "diag", "pivot", "shift"], 2),
    }

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _grow_shape(self, k):
        cells = [(0, 0)]
        while len(cells) < k:
            x, y = self._rng.choice(cells)
            dx, dy = self._rng.choice([(1, 0), (-1, 0), (0, 1), (0, -1)])
            if (x + dx, y + dy) not in cells:
                cells.append((x + dx, y + dy))
        mx, my = min(x for x, _ in cells), min(y for _, y in cells)
        ox, oy = self._rng.randint(0, 3), self._rng.randint(0, 3)  # place in the first quadrant
        return sorted((x - mx + ox, y - my + oy) for x, y in cells)

    def _make_step(self, kind):
        if kind == "shift":
            dx, dy = self._rng.choice([v for v in range(-4, 5) if v]), self._rng.choice([v for v in range(-4, 5) if v])
            return (f"translate by ({dx}, {dy})", lambda x, y: (x + dx, y + dy))
        if kind == "pivot":
            px, py = self._rng.randint(-2, 3), self._rng.randint(-2, 3)
            return (f"rotate 90 degrees clockwise about the point ({px}, {py})",
                    lambda x, y: (px + (y - py), py - (x - px)))
        return OPS[kind]

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        k, nsteps, kinds, self.attempts = self.LEVELS[self.difficulty]
        self.shape = self._grow_shape(k)
        while True:  # no step repeated back-to-back, and the result must differ from the start
            picks = [self._rng.choice(kinds)]
            while len(picks) < nsteps:
                picks.append(self._rng.choice([kd for kd in kinds if kd != picks[-1]]))
            steps = [self._make_step(kd) for kd in picks]
            cells = self.shape
            for _, f in steps:
                cells = [f(x, y) for x, y in cells]
            if sorted(cells) != self.shape:
                break
        self.answer = sorted(cells)
        self.turn, self.done = 0, False
        lines = "\n".join(f"  {i + 1}. {desc}" for i, (desc, _) in enumerate(steps))
        obs = (
            "A shape made of unit squares is given by the integer (x, y) coordinates of its cells "
            "(x grows to the right, y grows upward):\n"
            + self._draw(self.shape)
            + "\nCells: " + " ".join(f"({x},{y})" for x, y in self.shape)
            + f"\n\nApply these {nsteps} steps in order to every cell:\n{lines}\n\n"
            "Answer with the final cells in any order, e.g. \\boxed{(1,2) (0,-3) (4,4) (2,0)}.\n"
            f"You have {self.attempts} attempts; after a wrong one you are told how many of your cells "
            f"are right. Success = exactly the {k} correct cells."
        )
        return obs, {"attempts_left": self.attempts}

    @staticmethod
    def _draw(cells):
        xs, ys = [x for x, _ in cells], [y for _, y in cells]
        rows = []
        for y in range(max(ys), min(ys) - 1, -1):
            rows.append(f"y={y:>2} " + "".join("#" if (x, y) in cells else "." for x in range(min(xs), max(xs) + 1)))
        rows.append(f"      (x from {min(xs)} to {max(xs)})")
        return "\n".join(rows)

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"attempts_left": self.attempts}
        self.turn += 1
        pairs = re.findall(r"\(?\s*(-?\d+)\s*,\s*(-?\d+)\s*\)?", _parse(action))
        guess = sorted(set((int(a), int(b)) for a, b in pairs))
        reward, terminated = 0.0, False
        if len(guess) != len(self.answer):
            msg = (f"You gave {len(guess)} distinct cells but the shape has {len(self.answer)}; this does not "
                   "count as an attempt. Write cells like \\boxed{(1,2) (0,-3) (4,4) (2,0)}.")
        else:
            self.attempts -= 1
            if guess == self.answer:
                msg, reward, terminated = "Correct, those are exactly the final cells. You win!", 1.0, True
            else:
                right = len(set(guess) & set(self.answer))
                msg = (f"Not quite: {right} of your {len(guess)} cells are correct "
                       f"(the shape has {len(self.answer)} cells). Attempts left: {self.attempts}.")
                if self.attempts == 0:
                    msg += " No attempts left. You lose."
                    terminated = True
        truncated = not terminated and self.turn >= self.max_turns
        self.done = terminated or truncated
        return msg, reward, terminated, truncated, {"attempts_left": self.attempts}

    def solution(self):
        return ["\\boxed{%s}" % " ".join(f"({x},{y})" for x, y in self.answer)]
