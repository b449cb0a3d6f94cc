"""Choose how many crates of each kind to buy so an expedition's needs are met at the lowest cost.

skill: Optimization
hint: Work out each crate's cost per unit of the scarcest need, but check integer combinations near the cheapest mix: rounding a fractional plan up is often not optimal. Try mixes that meet every need with little waste.
difficulty: 1-3
turns: single
"""
import itertools
import random
import re

CRATES = ["Alpha", "Bravo", "Cargo", "Delta", "Echo"]
NEEDS = ["food", "water", "fuel"]


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class SupplyMixEnv:
    SETTINGS = {1: (3, 2), 2: (4, 2), 3: (5, 3)}  # difficulty -> (crate kinds, needs)
    MAX_QTY = 6
    ATTEMPTS = 3

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _shortfall(self, qty):
        return [max(0, self.need[k] - sum(q * c[k] for q, c in zip(qty, self.contents))) for k in range(len(self.need))]

    def _cost(self, qty):
        return sum(q * p for q, p in zip(qty, self.prices))

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        kinds, needs = self.SETTINGS[self.difficulty]
        for _ in range(300):
            self.contents = [[self._rng.randint(0, 5) for _ in range(needs)] for _ in range(kinds)]
            self.prices = [self._rng.randint(3, 12) for _ in range(kinds)]
            self.need = [self._rng.randint(10, 22) for _ in range(needs)]
            plans = [q for q in itertools.product(range(self.MAX_QTY + 1), repeat=kinds)
                     if not any(self._shortfall(q))]
            if not plans:
                continue
            best = min(plans, key=lambda q: (self._cost(q), q))
            used = sum(1 for q in best if q)
            cheapest = sum(1 for q in plans if self._cost(q) == self._cost(best))
            # Want a real mix (2+ crate kinds) and a fairly unique optimum.
            if used >= 2 and cheapest <= 2 and all(any(c) for c in self.contents):
                break
        self._best, self._best_cost = list(best), self._cost(best)
        self.attempts_left = self.ATTEMPTS
        self._turns = 0
        self._done = False
        rows = []
        for name, c, p in zip(CRATES, self.contents, self.prices):
            rows.append(f"  {name}: " + ", ".join(f"{v} {n}" for v, n in zip(c, NEEDS)) + f"; price {p}")
        wants = ", ".join(f"{v} {n}" for v, n in zip(self.need, NEEDS))
        example = " ".join(["2", "0", "1", "3", "0"][:kinds])
        obs = (
            f"Expedition supplies. The team needs at least: {wants}.\nCrate kinds (units per crate):\n"
            + "\n".join(rows)
            + f"\n\nBuy whole crates, at most {self.MAX_QTY} of each kind. Answer with the number of crates of "
            f"each kind in the order listed, e.g. \\boxed{{{example}}}. You win if the plan meets every need "
            f"and costs the minimum possible. You have {self.ATTEMPTS} attempts; after a wrong one you are told "
            "what was missing or that a cheaper plan exists."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "attempts_left": self.attempts_left}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        nums = re.findall(r"-?\d+", _content(action))
        kinds = len(self.prices)
        reward, terminated = 0.0, False
        if len(nums) != kinds or not all(0 <= int(x) <= self.MAX_QTY for x in nums):
            obs = (f"Invalid plan. Give exactly {kinds} whole numbers between 0 and {self.MAX_QTY}, one per crate "
                   "kind, separated by spaces.")
            reward = -0.05
        else:
            qty = [int(x) for x in nums]
            self.attempts_left -= 1
            short = self._shortfall(qty)
            cost = self._cost(qty)
            if any(short):
                missing = ", ".join(f"{s} {n}" for s, n in zip(short, NEEDS) if s)
                obs = f"That plan (cost {cost}) falls short by: {missing}."
            elif cost > self._best_cost:
                obs = f"That plan meets every need but costs {cost}; a cheaper plan exists."
            else:
                obs, reward, terminated = f"Every need met at cost {cost}, the minimum. You win!", 1.0, True
            if not terminated:
                if self.attempts_left == 0:
                    terminated = True
                    obs += f" No attempts left (the minimum cost was {self._best_cost}). You lose."
                else:
                    obs += f" Attempts left: {self.attempts_left}."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        return ["\\boxed{" + " ".join(str(q) for q in self._best) + "}"]
