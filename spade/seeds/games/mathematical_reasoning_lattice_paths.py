"""Count the monotone lattice paths through a grid with blocked cells (and a checkpoint).

skill: Mathematical Reasoning
hint: Fill a table: ways(cell) = ways(cell above) + ways(cell to the left), with 0 for blocked cells and 1 at the start. With a checkpoint, multiply (start -> checkpoint) by (checkpoint -> end).
difficulty: 1-3
turns: single
"""
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_ATTEMPTS = 2

# difficulty -> (rows, cols, blocked cells, checkpoint?)
_LEVELS = {1: (5, 5, 3, False), 2: (6, 6, 6, False), 3: (7, 8, 9, True)}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


def _count(grid, start, end):
    """Right/down paths from start to end avoiding '#'."""
    (r0, c0), (r1, c1) = start, end
    ways = {}
    for r in range(r0, r1 + 1):
        for c in range(c0, c1 + 1):
            if grid[r][c] == "#":
                ways[(r, c)] = 0
            elif (r, c) == start:
                ways[(r, c)] = 1
            else:
                ways[(r, c)] = ways.get((r - 1, c), 0) + ways.get((r, c - 1), 0)
    return ways[end]


class LatticePathsEnv:
    def __init__(self, max_turns=10, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.rows, self.cols, self.blocked, self.checkpoint = _LEVELS[difficulty]
        self._done = True

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        R, C = self.rows, self.cols
        end = (R - 1, C - 1)
        while True:
            grid = [["."] * C for _ in range(R)]
            inner = [(r, c) for r in range(R) for c in range(C) if (r, c) not in ((0, 0), end)]
            cells = self._rng.sample(inner, self.blocked + (1 if self.checkpoint else 0))
            for r, c in cells[:self.blocked]:
                grid[r][c] = "#"
            if self.checkpoint:
                cp = cells[-1]
                grid[cp[0]][cp[1]] = "*"
                total = _count(grid, (0, 0), cp) * _count(grid, cp, end)
                free = _count(grid, (0, 0), end)
                ok = total != free  # the checkpoint must actually cut some paths
            else:
                total, ok = _count(grid, (0, 0), end), True
            if ok and total >= 21 and total != 100:
                break
        grid[0][0], grid[R - 1][C - 1] = "S", "E"
        self._grid, self._answer = ["".join(row) for row in grid], total
        self._attempts = _ATTEMPTS
        self._turn = 0
        self._done = False
        cp_rule = (" The path MUST pass through the checkpoint '*'." if self.checkpoint else "")
        obs = (
            f"Grid ({R} rows x {C} columns), row 1 at the top:\n" + "\n".join(self._grid) + "\n"
            f"'S' = start (top-left), 'E' = end (bottom-right), '#' = blocked, '.' = free"
            f"{', * = checkpoint (free)' if self.checkpoint else ''}.\n"
            f"How many different paths go from S to E moving only RIGHT or DOWN one cell at a time and never "
            f"entering a blocked cell?{cp_rule}\n"
            f"Answer with one integer, e.g. \\boxed{{57}}. You have {_ATTEMPTS} attempts; a wrong answer is "
            f"told 'too high' or 'too low'. Success: the exact count. Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"attempts_left": self._attempts, "turn": self._turn, "difficulty": self.difficulty}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turn += 1
        obs, reward, terminated = self._play(_content(action))
        truncated = False
        if terminated:
            self._done = True
        elif self._turn >= self.max_turns:
            self._done, truncated, reward = True, True, 0.0
            obs += "\nTurn budget exhausted."
        return obs, reward, terminated, truncated, self._info()

    def _play(self, text):
        text = text.replace(",", "").strip()
        if not re.fullmatch(r"[+-]?\d+", text):
            return "Invalid answer: give one integer, e.g. \\boxed{57}.", -0.05, False
        guess = int(text)
        if guess == self._answer:
            return f"Correct! There are {self._answer} paths.", 1.0, True
        self._attempts -= 1
        verdict = "too high" if guess > self._answer else "too low"
        if self._attempts == 0:
            return f"{guess} is {verdict}. No attempts left.", 0.0, True
        return f"{guess} is {verdict}. Attempts left: {self._attempts}.", 0.0, False

    def solution(self):
        return [f"\\boxed{{{self._answer}}}"]
