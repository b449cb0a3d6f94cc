"""Switch off every light on a grid where pressing a cell toggles it and its four neighbours.

skill: Spatial Reasoning
hint: Pressing a cell twice cancels out and the order of presses does not matter. Clear the grid row by row: a light left on in one row can only be fixed by pressing the cell directly below it. Plus-shaped groups of lit cells mark a single press.
difficulty: 1-3
turns: multi
"""
import random
import re

# (grid size, number of scrambling presses, press budget)
_LEVELS = {1: (3, 3, 8), 2: (4, 5, 9), 3: (5, 7, 10)}


class LightsOutEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _press(self, grid, r, c):
        for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
            rr, cc = r + dr, c + dc
            if 0 <= rr < self.n and 0 <= cc < self.n:
                grid[rr][cc] ^= 1

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.n, k, budget = _LEVELS[self.difficulty]
        cells = [(r, c) for r in range(self.n) for c in range(self.n)]
        while True:
            # scramble a dark board with k distinct presses; those presses (in any order) solve it
            self._presses = sorted(self._rng.sample(cells, k))
            self.grid = [[0] * self.n for _ in range(self.n)]
            for r, c in self._presses:
                self._press(self.grid, r, c)
            if sum(map(sum, self.grid)) >= 3:
                break
        self.budget = min(budget, self.max_turns)
        self.used = 0
        self.turn = 0
        self.done = False
        obs = (
            f"Lights Out on a {self.n}x{self.n} grid. '#' is a lit cell, '.' is dark. Rows and columns are numbered "
            f"1..{self.n} from the top-left.\nPressing a cell toggles that cell and its up/down/left/right neighbours "
            f"(cells off the edge are ignored).\nGoal: make every cell dark. Press one cell per reply, giving row then "
            f"column, e.g. \\boxed{{2 3}} presses row 2, column 3.\nYou may press at most {self.budget} times "
            f"(you have {self.max_turns} turns); the board is shown after every press.\n{self._show()}"
        )
        return obs, {"presses_left": self.budget}

    def _show(self):
        head = "    " + " ".join(str(c + 1) for c in range(self.n))
        rows = [f" {r + 1}  " + " ".join("#" if v else "." for v in row) for r, row in enumerate(self.grid)]
        return "\n".join([head] + rows) + f"\nLit cells: {sum(map(sum, self.grid))}"

    def solution(self):
        return [f"\\boxed{{{r + 1} {c + 1}}}" for r, c in self._presses]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        nums = re.fullmatch(r"\(?\s*(?:row\s*)?(\d+)\s*[, ]\s*(?:col(?:umn)?\s*)?(\d+)\s*\)?", text)
        term, reward = False, 0.0
        if not nums:
            obs, reward = "Unrecognised action. Give a row and a column, e.g. \\boxed{2 3}.", -0.05
        else:
            r, c = int(nums.group(1)) - 1, int(nums.group(2)) - 1
            if not (0 <= r < self.n and 0 <= c < self.n):
                obs, reward = f"Cell out of range: rows and columns go from 1 to {self.n}.", -0.05
            else:
                self._press(self.grid, r, c)
                self.used += 1
                left = self.budget - self.used
                if not any(map(any, self.grid)):
                    self.done = True
                    return f"Pressed ({r + 1},{c + 1}). Every light is off. You win!", 1.0, True, False, {"presses_left": left}
                obs = f"Pressed ({r + 1},{c + 1}).\n{self._show()}\nPresses left: {left}."
                if left <= 0:
                    term = True
                    obs += " No presses left with lights still on. You lose."
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"presses_left": self.budget - self.used}
