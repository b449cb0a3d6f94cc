"""Fill the masked cells of a periodic two-dimensional letter tiling.

skill: Pattern Recognition
hint: Find the horizontal period of one complete row, then how each row is shifted relative to the row above (or after how many rows the pattern repeats). A masked cell equals a visible cell one full period away horizontally or vertically. List answers in reading order.
difficulty: 1-3
turns: single
"""
import random
import re

SYMBOLS = "ABCDEFGH"


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip().upper()


class TilingCompletionEnv:
    # rows, cols, masked cells, attempts
    LEVELS = {1: (6, 8, 4, 3), 2: (7, 10, 6, 2), 3: (8, 12, 9, 2)}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _pattern(self):
        """Returns (cell function, class function): cells of one class always hold the same symbol."""
        R = self._rng
        if self.difficulty == 1:  # one motif per row, each row shifted by s
            p, s = R.randint(3, 4), R.randint(1, 3)
            motif = [R.choice(SYMBOLS[:5]) for _ in range(p)]
            cls = lambda r, c: (c + s * r) % p
            return (lambda r, c: motif[cls(r, c)]), cls, motif
        p, q = R.randint(2, 3), R.randint(3, 4)
        tile = [[R.choice(SYMBOLS[:6]) for _ in range(q)] for _ in range(p)]
        s = 0 if self.difficulty == 2 else R.randint(1, q - 1)  # brick-like offset per tile row at level 3
        cls = lambda r, c: (r % p, (c + s * (r // p)) % q)
        return (lambda r, c: tile[cls(r, c)[0]][cls(r, c)[1]]), cls, [x for row in tile for x in row]

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        rows, cols, nmask, self.attempts = self.LEVELS[self.difficulty]
        while True:
            cell, cls, symbols = self._pattern()
            if len(set(symbols)) < 3:  # too uniform to be interesting
                continue
            grid = [[cell(r, c) for c in range(cols)] for r in range(rows)]
            coords = [(r, c) for r in range(rows) for c in range(cols)]
            if self.difficulty == 3:  # a 2x2 hole plus scattered cells
                r0, c0 = self._rng.randrange(rows - 1), self._rng.randrange(cols - 1)
                hole = [(r0, c0), (r0, c0 + 1), (r0 + 1, c0), (r0 + 1, c0 + 1)]
                rest = [x for x in coords if x not in hole]
                masked = hole + self._rng.sample(rest, nmask - 4)
            else:
                masked = self._rng.sample(coords, nmask)
            masked = sorted(masked)
            visible = {cls(r, c) for r, c in coords if (r, c) not in masked}
            # every masked cell must be recoverable from a visible cell of the same class
            if all(cls(r, c) in visible for r, c in masked):
                break
        self.answer = "".join(grid[r][c] for r, c in masked)
        for r, c in masked:
            grid[r][c] = "?"
        self.turn, self.done = 0, False
        header = "    " + "".join(f"{c % 10}" for c in range(cols))
        body = "\n".join(f"{r:>2}  " + "".join(row) for r, row in enumerate(grid))
        obs = (
            f"This {rows}x{cols} grid of letters follows a repeating (periodic) pattern, but {nmask} cells are "
            "hidden as '?'.\n" + header + "\n" + body + "\n"
            f"Give the {nmask} hidden letters in reading order (row by row, left to right), as one string, "
            f"e.g. \\boxed{{{''.join(SYMBOLS[i % 5] for i in range(nmask))}}}.\n"
            f"You have {self.attempts} attempts; a wrong answer tells you how many letters are right. "
            "Success = all hidden letters correct."
        )
        return obs, {"attempts_left": self.attempts}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"attempts_left": self.attempts}
        self.turn += 1
        guess = re.sub(r"[^A-Z]", "", _parse(action))
        reward, terminated = 0.0, False
        if len(guess) != len(self.answer):
            msg = (f"Give exactly {len(self.answer)} letters (you gave {len(guess)}); "
                   "this does not count as an attempt.")
        else:
            self.attempts -= 1
            if guess == self.answer:
                msg, reward, terminated = "Correct, the pattern is complete. You win!", 1.0, True
            else:
                right = sum(a == b for a, b in zip(guess, self.answer))
                msg = f"Not quite: {right} of {len(self.answer)} letters are right. Attempts left: {self.attempts}."
                if self.attempts == 0:
                    msg += " No attempts left. You lose."
                    terminated = True
        truncated = not terminated and self.turn >= self.max_turns
        self.done = terminated or truncated
        return msg, reward, terminated, truncated, {"attempts_left": self.attempts}

    def solution(self):
        return ["\\boxed{%s}" % self.answer]
