"""Measure an exact amount of water with unmarked jugs, within a limited number of pours.

skill: Mathematical Reasoning
hint: Reachable amounts are combinations a*x + b*y of the capacities. Repeatedly fill one jug, pour it into another and empty that one when full; try both directions and count moves before committing.
difficulty: 1-3
turns: multi
"""
import random
import re
from collections import deque

# (number of jugs, capacity range, (min, max) optimal pours, slack pours over the optimum)
_LEVELS = {1: (2, (3, 9), (3, 6), 6), 2: (2, (5, 15), (6, 10), 3), 3: (3, (3, 14), (7, 11), 1)}


def _moves(state, caps):
    """Yield (command, next_state) for every legal move from a state."""
    names = "ABC"
    for i in range(len(caps)):
        if state[i] < caps[i]:
            yield f"fill {names[i]}", state[:i] + (caps[i],) + state[i + 1:]
        if state[i] > 0:
            yield f"empty {names[i]}", state[:i] + (0,) + state[i + 1:]
        for j in range(len(caps)):
            if i != j and state[i] > 0 and state[j] < caps[j]:
                amount = min(state[i], caps[j] - state[j])
                nxt = list(state)
                nxt[i] -= amount
                nxt[j] += amount
                yield f"pour {names[i]} {names[j]}", tuple(nxt)


def _bfs(caps):
    """Shortest pour sequences: parent links and the first state holding each amount."""
    start = tuple(0 for _ in caps)
    parent = {start: None}
    first = {}
    queue = deque([start])
    while queue:
        s = queue.popleft()
        for a in s:
            first.setdefault(a, s)
        for cmd, nxt in _moves(s, caps):
            if nxt not in parent:
                parent[nxt] = (s, cmd)
                queue.append(nxt)
    return parent, first


def _path(parent, state):
    cmds = []
    while parent[state] is not None:
        state, cmd = parent[state]
        cmds.append(cmd)
    return cmds[::-1]


class WaterJugsEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        n, (lo, hi), (dmin, dmax), slack = _LEVELS[self.difficulty]
        while True:
            caps = tuple(sorted(self._rng.sample(range(lo, hi + 1), n), reverse=True))
            parent, first = _bfs(caps)
            targets = sorted(a for a, s in first.items()
                             if a > 0 and dmin <= len(_path(parent, s)) <= dmax)
            if targets:
                break
        self.caps = caps
        self.target = self._rng.choice(targets)
        self._plan = _path(parent, first[self.target])
        self.budget = min(len(self._plan) + slack, self.max_turns)
        self.state = tuple(0 for _ in caps)
        self.pours = 0
        self.turn = 0
        self.done = False
        names = "ABC"
        jugs = ", ".join(f"jug {names[i]} holds {c} litres" for i, c in enumerate(caps))
        obs = (
            f"You have {n} unmarked jugs: {jugs}. All start empty and you have an unlimited tap and drain.\n"
            f"Goal: end up with exactly {self.target} litres in any single jug.\n"
            f"Commands (one per reply): \\boxed{{fill A}} fills jug A to the brim; \\boxed{{empty B}} empties jug B; "
            f"\\boxed{{pour A B}} pours from A into B until A is empty or B is full.\n"
            f"You may use at most {self.budget} of these moves (invalid commands do not use moves but do use turns; "
            f"you have {self.max_turns} turns). You win as soon as some jug holds exactly {self.target} litres.\n"
            f"{self._show()}"
        )
        return obs, {"moves_left": self.budget}

    def _show(self):
        return "Jugs now: " + ", ".join(f"{'ABC'[i]}={v}/{c}" for i, (v, c) in enumerate(zip(self.state, self.caps)))

    def solution(self):
        return [f"\\boxed{{{cmd}}}" for cmd in self._plan]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        text = re.sub(r"\s+", " ", re.sub(r"\b(into|to|jug)\b|->|,", " ", text)).strip()
        legal = {cmd.lower(): nxt for cmd, nxt in _moves(self.state, self.caps)}
        if text in legal:
            self.state = legal[text]
            self.pours += 1
            left = self.budget - self.pours
            if self.target in self.state:
                self.done = True
                return f"{self._show()}. Exactly {self.target} litres measured. You win!", 1.0, True, False, {"moves_left": left}
            if left <= 0:
                self.done = True
                return f"{self._show()}. No moves left and no jug holds {self.target} litres. You lose.", 0.0, True, False, {"moves_left": 0}
            obs = f"{self._show()}. Moves left: {left}."
            reward = 0.0
        else:
            valid = re.fullmatch(r"(fill|empty) [abc]|pour [abc] [abc]", text)
            why = "that move changes nothing or names a missing jug" if valid else "unrecognised command"
            obs = f"Invalid ({why}). Use fill X, empty X or pour X Y with jugs {'ABC'[:len(self.caps)]}. {self._show()}."
            reward = -0.05
        truncated = self.turn >= self.max_turns
        if truncated:
            self.done = True
        return obs, reward, False, truncated, {"moves_left": self.budget - self.pours}
