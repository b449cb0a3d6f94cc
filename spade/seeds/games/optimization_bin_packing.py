"""Load parcels into trucks one at a time using as few trucks as possible.

skill: Optimization
hint: Divide the total size by the truck capacity: that lower bound is reachable here, so every used truck must end exactly full. Find groups of parcels that sum exactly to the capacity before loading; start with the largest parcels.
difficulty: 1-3
turns: multi
"""
import random
import re

LETTERS = "ABCDEFGHIJKLMNOP"


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class TruckLoadingEnv:
    SETTINGS = {1: (3, 10), 2: (4, 12), 3: (5, 15)}  # difficulty -> (trucks needed, capacity)

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _split(self, cap):
        """Cut one full truck load into 2-3 parcels of size >= 2."""
        parts = self._rng.choice([2, 3, 3])
        cuts = sorted(self._rng.sample(range(2, cap - 1), parts - 1))
        sizes = [b - a for a, b in zip([0] + cuts, cuts + [cap])]
        return sizes if min(sizes) >= 2 else self._split(cap)

    def _first_fit_decreasing(self, sizes):
        loads = []
        for s in sorted(sizes, reverse=True):
            for i, load in enumerate(loads):
                if load + s <= self.cap:
                    loads[i] += s
                    break
            else:
                loads.append(s)
        return len(loads)

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.k, self.cap = self.SETTINGS[self.difficulty]
        for _ in range(300):
            # Build a perfect packing, then shuffle it: the optimum is exactly k full trucks.
            groups = [self._split(self.cap) for _ in range(self.k)]
            pieces = [(s, g) for g, sizes in enumerate(groups) for s in sizes]
            self._rng.shuffle(pieces)
            if self.difficulty == 1 or self._first_fit_decreasing([s for s, _ in pieces]) > self.k:
                break
        self.sizes = [s for s, _ in pieces]
        self._groups = [g for _, g in pieces]
        self.n_trucks = self.k + 1  # one spare truck, so mistakes are possible
        self.where = {}  # parcel index -> truck number
        self._turns = 0
        self._done = False
        listing = ", ".join(f"{LETTERS[i]}={s}" for i, s in enumerate(self.sizes))
        obs = (
            f"Truck loading. Parcels (name=size): {listing}.\nTotal size {sum(self.sizes)}. Each truck holds "
            f"at most {self.cap}; trucks are numbered 1-{self.n_trucks}.\n"
            "Each turn load one parcel: \\boxed{C 2} (or \\boxed{put C 2}) puts parcel C in truck 2; "
            "\\boxed{remove C} unloads it. Overfilling is refused. When the last parcel is loaded the result is "
            "scored: you win if you used the minimum possible number of trucks, otherwise you lose. "
            f"You have {self.max_turns} turns."
        )
        return obs, self._info()

    def _loads(self):
        loads = [0] * (self.n_trucks + 1)
        for i, t in self.where.items():
            loads[t] += self.sizes[i]
        return loads

    def _status(self):
        loads = self._loads()
        trucks = ", ".join(f"truck {t}: {loads[t]}/{self.cap}" for t in range(1, self.n_trucks + 1))
        left = [LETTERS[i] for i in range(len(self.sizes)) if i not in self.where]
        return f"Loads: {trucks}. Unloaded parcels: {', '.join(left) or 'none'}."

    def _info(self):
        return {"turn": self._turns, "loaded": len(self.where), "parcels": len(self.sizes)}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        cmd = _content(action).upper()
        put = re.fullmatch(r"(?:PUT\s+)?([A-Z])\s*(?:->|,|IN|INTO|TO)?\s*(?:TRUCK\s*)?(\d+)", cmd)
        rem = re.fullmatch(r"REMOVE\s+([A-Z])", cmd)
        i = LETTERS.find((put or rem).group(1)) if (put or rem) else -1
        reward, terminated = 0.0, False
        if not 0 <= i < len(self.sizes):
            obs = (f"Invalid action. Use \\boxed{{C 2}} (parcel letter A-{LETTERS[len(self.sizes) - 1]}, truck "
                   f"1-{self.n_trucks}) or \\boxed{{remove C}}. {self._status()}")
            reward = -0.05
        elif rem:
            if i in self.where:
                del self.where[i]
                obs = f"Unloaded {LETTERS[i]}. {self._status()}"
            else:
                obs, reward = f"Parcel {LETTERS[i]} is not loaded. {self._status()}", -0.05
        else:
            t = int(put.group(2))
            if i in self.where:
                obs, reward = f"Parcel {LETTERS[i]} is already in truck {self.where[i]}; remove it first.", -0.05
            elif not 1 <= t <= self.n_trucks:
                obs, reward = f"There is no truck {t}; trucks are 1-{self.n_trucks}.", -0.05
            elif self._loads()[t] + self.sizes[i] > self.cap:
                obs, reward = f"Truck {t} cannot take {LETTERS[i]} (size {self.sizes[i]}). {self._status()}", -0.05
            else:
                self.where[i] = t
                obs = f"Loaded {LETTERS[i]} (size {self.sizes[i]}) into truck {t}. {self._status()}"
                if len(self.where) == len(self.sizes):
                    used = sum(1 for load in self._loads() if load > 0)
                    terminated = True
                    if used == self.k:
                        reward = 1.0
                        obs += f" All parcels loaded in {used} trucks, the minimum. You win!"
                    else:
                        obs += f" All parcels loaded, but you used {used} trucks; {self.k} suffice. You lose."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        # The hidden construction groups give a perfect packing; load largest parcels first.
        order = sorted(range(len(self.sizes)), key=lambda i: (self._groups[i], -self.sizes[i], i))
        return [f"\\boxed{{{LETTERS[i]} {self._groups[i] + 1}}}" for i in order]
