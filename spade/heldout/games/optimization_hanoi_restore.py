"""Gather a scrambled Tower of Hanoi onto one peg using (nearly) the minimum number of moves.

skill: Optimization
hint: Work from the largest disk down. If the largest disk is already on the goal peg, ignore it; otherwise first send every smaller disk to the third peg, move the large disk once, then bring the smaller tower over. Never move the same disk twice in a row.
difficulty: 1-3
turns: multi
"""
import random
import re

# (disks, (min, max) optimal moves, slack moves over the optimum)
_LEVELS = {1: (3, (4, 7), 3), 2: (4, (8, 14), 1), 3: (5, (14, 22), 0)}
_PEGS = "ABC"


def _gather(pos, k, target, moves):
    """Optimal moves that put disks 1..k (1 = smallest) on target; pos[d] is disk d's peg, updated in place."""
    if k == 0:
        return
    if pos[k] == target:
        _gather(pos, k - 1, target, moves)
        return
    spare = 3 - pos[k] - target
    _gather(pos, k - 1, spare, moves)
    moves.append((pos[k], target))
    pos[k] = target
    _gather(pos, k - 1, target, moves)


class HanoiRestoreEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.n, (lo, hi), slack = _LEVELS[self.difficulty]
        while True:
            pos = [None] + [self._rng.randrange(3) for _ in range(self.n)]
            self.goal = self._rng.randrange(3)
            plan = []
            _gather(list(pos), self.n, self.goal, plan)
            if lo <= len(plan) <= hi:
                break
        self._plan = plan
        # pegs as stacks listed bottom -> top; larger disks always lie below smaller ones
        self.pegs = [[d for d in range(self.n, 0, -1) if pos[d] == p] for p in range(3)]
        self.budget = min(len(plan) + slack, self.max_turns)
        self.used = 0
        self.turn = 0
        self.done = False
        extra = "exactly the minimum number" if slack == 0 else f"the minimum number plus at most {slack}"
        obs = (
            f"Tower of Hanoi with {self.n} disks (1 = smallest, {self.n} = largest) on pegs A, B, C, currently scrambled.\n"
            "Move one top disk per reply from one peg to another; a disk may never sit on a smaller disk. "
            "Write the source and destination peg: \\boxed{A C} moves the top disk of A onto C.\n"
            f"Goal: all {self.n} disks stacked on peg {_PEGS[self.goal]}. You may make at most {self.budget} moves, "
            f"which is {extra} needed; illegal moves are refused and do not count (you have {self.max_turns} turns).\n"
            f"{self._show()}"
        )
        return obs, {"moves_left": self.budget}

    def _show(self):
        return "Pegs (bottom -> top): " + "; ".join(
            f"{_PEGS[p]}: {' '.join(map(str, s)) if s else '(empty)'}" for p, s in enumerate(self.pegs))

    def solution(self):
        return [f"\\boxed{{{_PEGS[a]} {_PEGS[b]}}}" for a, b in self._plan]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().upper()
        mm = re.fullmatch(r"(?:MOVE\s+)?(?:FROM\s+)?([ABC])\s*(?:->|TO|,|\s)?\s*([ABC])", text)
        term, reward = False, 0.0
        if not mm:
            obs, reward = "Unrecognised move. Give two pegs, e.g. \\boxed{A C}.", -0.05
        else:
            a, b = _PEGS.index(mm.group(1)), _PEGS.index(mm.group(2))
            if a == b or not self.pegs[a]:
                obs = f"Illegal: {'source and destination are the same' if a == b else 'peg ' + _PEGS[a] + ' is empty'}. {self._show()}"
            elif self.pegs[b] and self.pegs[b][-1] < self.pegs[a][-1]:
                obs = f"Illegal: disk {self.pegs[a][-1]} cannot go on smaller disk {self.pegs[b][-1]}. {self._show()}"
            else:
                disk = self.pegs[a].pop()
                self.pegs[b].append(disk)
                self.used += 1
                left = self.budget - self.used
                if len(self.pegs[self.goal]) == self.n:
                    self.done = True
                    return f"Moved disk {disk} to {_PEGS[b]}. All disks are on {_PEGS[self.goal]}. You win!", 1.0, True, False, {"moves_left": left}
                obs = f"Moved disk {disk} from {_PEGS[a]} to {_PEGS[b]}. {self._show()}. Moves left: {left}."
                if left <= 0:
                    term = True
                    obs += " Out of moves. You lose."
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"moves_left": self.budget - self.used}
