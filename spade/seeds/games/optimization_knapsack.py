"""Pack a knapsack one item at a time and declare done only when the total value is the best possible.

skill: Optimization
hint: Greedy by value/weight ratio is often not optimal here. Before adding anything, compare the total value of a few combinations that nearly fill the capacity (a small dynamic program over capacity works), then add that set.
difficulty: 1-3
turns: multi
"""
import random
import re

LETTERS = "ABCDEFGHIJKL"


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class KnapsackBuilderEnv:
    N_ITEMS = {1: 6, 2: 8, 3: 10}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    # ---- instance generation -------------------------------------------------------------
    def _best(self, items, cap):
        """0/1 knapsack DP; returns (best value, sorted indices of one optimal subset)."""
        n = len(items)
        table = [[0] * (cap + 1) for _ in range(n + 1)]
        for i, (w, v) in enumerate(items, 1):
            for c in range(cap + 1):
                table[i][c] = table[i - 1][c]
                if w <= c and table[i - 1][c - w] + v > table[i][c]:
                    table[i][c] = table[i - 1][c - w] + v
        chosen, c = [], cap
        for i in range(n, 0, -1):
            if table[i][c] != table[i - 1][c]:
                chosen.append(i - 1)
                c -= items[i - 1][0]
        return table[n][cap], sorted(chosen)

    def _greedy(self, items, cap):
        order = sorted(range(len(items)), key=lambda i: (-items[i][1] / items[i][0], i))
        load = value = 0
        for i in order:
            if load + items[i][0] <= cap:
                load += items[i][0]
                value += items[i][1]
        return value

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        n = self.N_ITEMS[self.difficulty]
        for _ in range(300):
            items = [(self._rng.randint(3, 15), self._rng.randint(4, 30)) for _ in range(n)]
            cap = int(sum(w for w, _ in items) * 0.45)
            best, chosen = self._best(items, cap)
            # Harder levels only keep instances where the ratio-greedy packing falls short.
            if len(chosen) >= 2 and (self.difficulty == 1 or self._greedy(items, cap) < best):
                break
        self.items, self.capacity = items, cap
        self._optimum, self._opt_set = best, chosen
        self.packed = []
        self._turns = 0
        self._done = False
        lines = [f"  {LETTERS[i]}: weight {w:2d}, value {v:2d}" for i, (w, v) in enumerate(items)]
        obs = (
            f"Knapsack builder. Capacity: {cap}. Items (each can be packed at most once):\n"
            + "\n".join(lines)
            + "\n\nBuild the packing one action per turn:\n"
            "  \\boxed{add C}     put item C in the knapsack (refused if it would exceed the capacity)\n"
            "  \\boxed{remove C}  take item C out again\n"
            "  \\boxed{done}      finish and have the packing scored\n"
            "You win only if, when you say done, the total value of the packed items equals the maximum "
            "value achievable within the capacity. Saying done with a smaller value loses. "
            f"You have {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        load = sum(self.items[i][0] for i in self.packed)
        value = sum(self.items[i][1] for i in self.packed)
        return {"turn": self._turns, "load": load, "value": value, "packed": "".join(LETTERS[i] for i in sorted(self.packed))}

    def _status(self):
        info = self._info()
        names = ", ".join(LETTERS[i] for i in sorted(self.packed)) or "nothing"
        return (f"Packed: {names}. Load {info['load']}/{self.capacity} (remaining {self.capacity - info['load']}), "
                f"total value {info['value']}.")

    # ---- interaction ----------------------------------------------------------------------
    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        cmd = _content(action).lower()
        reward, terminated = 0.0, False
        m = re.fullmatch(r"(add|remove)\s+([a-z])", cmd)
        i = LETTERS.lower().find(m.group(2)) if m else -1
        if cmd == "done":
            terminated = True
            value = self._info()["value"]
            if value == self._optimum:
                reward, obs = 1.0, f"{self._status()} That is the best possible value. You win!"
            else:
                obs = f"{self._status()} Not optimal: the best achievable value is {self._optimum}. You lose."
        elif 0 <= i < len(self.items):
            w = self.items[i][0]
            if m.group(1) == "add":
                if i in self.packed:
                    obs, reward = f"Item {LETTERS[i]} is already packed. {self._status()}", -0.05
                elif self._info()["load"] + w > self.capacity:
                    over = self._info()["load"] + w - self.capacity
                    obs, reward = f"Item {LETTERS[i]} does not fit (over capacity by {over}). {self._status()}", -0.05
                else:
                    self.packed.append(i)
                    obs = f"Added {LETTERS[i]}. {self._status()}"
            elif i in self.packed:
                self.packed.remove(i)
                obs = f"Removed {LETTERS[i]}. {self._status()}"
            else:
                obs, reward = f"Item {LETTERS[i]} is not packed. {self._status()}", -0.05
        else:
            obs = ("Invalid action. Use \\boxed{add C}, \\boxed{remove C} (C = an item letter from "
                   f"A to {LETTERS[len(self.items) - 1]}) or \\boxed{{done}}. {self._status()}")
            reward = -0.05
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        return [f"\\boxed{{add {LETTERS[i]}}}" for i in self._opt_set] + ["\\boxed{done}"]
