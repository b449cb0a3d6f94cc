"""Drive a delivery van stop by stop and return to the depot along the shortest possible round trip.

skill: Optimization
hint: Nearest-next-stop is a trap: it strands you far from the depot at the end. Think of the tour as a loop: visit stops in a sweep around the map and check that no two legs of the loop cross or double back.
difficulty: 1-3
turns: multi
"""
import itertools
import random
import re

NAMES = "PQRSTUVW"


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class DeliveryTourEnv:
    N_STOPS = {1: 5, 2: 6, 3: 7}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _d(self, a, b):
        (x1, y1), (x2, y2) = self.points[a], self.points[b]
        return abs(x1 - x2) + abs(y1 - y2)

    def _length(self, order):
        route = [0] + list(order) + [0]
        return sum(self._d(a, b) for a, b in zip(route, route[1:]))

    def _nearest_neighbour(self):
        here, left, order = 0, list(range(1, len(self.points))), []
        while left:
            here = min(left, key=lambda s: (self._d(here, s), s))
            left.remove(here)
            order.append(here)
        return self._length(order)

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        n = self.N_STOPS[self.difficulty]
        cells = [(x, y) for x in range(10) for y in range(10)]
        for _ in range(300):
            self.points = self._rng.sample(cells, n + 1)  # index 0 is the depot
            best = min(itertools.permutations(range(1, n + 1)), key=self._length)
            # Keep instances where the nearest-neighbour tour is not already optimal.
            if self._nearest_neighbour() > self._length(best):
                break
        self._best_order, self._best_len = list(best), self._length(best)
        self.route, self.travelled = [], 0
        self._turns = 0
        self._done = False
        labels = ["depot"] + list(NAMES[:n])
        coords = "\n".join(f"  {labels[i]}: ({x}, {y})" for i, (x, y) in enumerate(self.points))
        header = "        " + " ".join(f"{lab[:5]:>5}" for lab in labels)
        rows = [f"  {labels[i][:5]:>5} " + " ".join(f"{self._d(i, j):5d}" for j in range(n + 1)) for i in range(n + 1)]
        obs = (
            f"Delivery tour. The van starts at the depot and must visit each of the {n} stops once, then "
            "return to the depot. Driving distance is the Manhattan (grid) distance.\nCoordinates:\n"
            + coords + "\nDistance table:\n" + header + "\n" + "\n".join(rows)
            + "\n\nEach turn, name the next stop, e.g. \\boxed{R} or \\boxed{go R}. After the last stop the van "
            "drives back to the depot automatically and the tour is scored. You win if the total length equals "
            f"the shortest possible round trip; a longer tour loses. You have {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "route": "".join(NAMES[s - 1] for s in self.route), "distance": self.travelled}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        n = len(self.points) - 1
        m = re.fullmatch(r"(?:GO\s+(?:TO\s+)?)?([A-Z])", _content(action).upper())
        s = NAMES.find(m.group(1)) + 1 if m else 0
        reward, terminated = 0.0, False
        if not 1 <= s <= n:
            obs, reward = f"Invalid action. Name an unvisited stop {NAMES[0]}-{NAMES[n - 1]}, e.g. \\boxed{{go Q}}.", -0.05
        elif s in self.route:
            obs, reward = f"Stop {NAMES[s - 1]} was already visited.", -0.05
        else:
            leg = self._d(self.route[-1] if self.route else 0, s)
            self.route.append(s)
            self.travelled += leg
            left = [NAMES[i - 1] for i in range(1, n + 1) if i not in self.route]
            obs = f"Drove {leg} to {NAMES[s - 1]}. Distance so far {self.travelled}."
            if left:
                obs += f" Still to visit: {', '.join(left)}."
            else:
                back = self._d(s, 0)
                self.travelled += back
                terminated = True
                obs += f" Back to the depot: +{back}. Tour length {self.travelled}."
                if self.travelled == self._best_len:
                    reward = 1.0
                    obs += " That is the shortest possible tour. You win!"
                else:
                    obs += f" The shortest tour has length {self._best_len}. You lose."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        return [f"\\boxed{{go {NAMES[s - 1]}}}" for s in self._best_order]
