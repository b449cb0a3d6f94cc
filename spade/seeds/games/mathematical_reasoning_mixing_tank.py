"""Mix solutions in a tank to hit an exact volume and concentration, using unlabelled sources.

skill: Mathematical Reasoning
hint: The target is stronger than every labelled source, so unlabelled ones are needed. Pour a little of each and solve (old_solute + k*x)/(old_volume + k) = shown% for x. Then write volume and solute equations and solve them in whole litres.
difficulty: 1-3
turns: multi
"""
import random
import re
from fractions import Fraction

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_CAPACITY = 40

# difficulty -> (initial tank?, labelled sources, unlabelled sources, jug size in litres)
_LEVELS = {1: (False, 1, 1, 5), 2: (True, 2, 1, 5), 3: (True, 1, 2, 4)}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


def _pct(frac):
    if frac.denominator == 1:
        return f"{frac.numerator}%"
    return f"{frac.numerator}/{frac.denominator}% (~{float(frac):.3f}%)"


class MixingTankEnv:
    def __init__(self, max_turns=20, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self._has_start, self._n_known, self._n_unknown, self.jug = _LEVELS[difficulty]
        self._done = True

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        rng = self._rng
        while True:
            v0 = rng.randint(3, 8) if self._has_start else 0
            c0 = rng.randrange(10, 45, 5) if self._has_start else 0
            names = "ABCD"[:self._n_known] + "XY"[:self._n_unknown]
            conc = {n: rng.randrange(5, 45, 5) for n in names[:self._n_known]}
            conc.update({n: rng.randint(55, 95) for n in names[self._n_known:]})
            plan = {n: rng.randint(2, 8) for n in names}
            volume = v0 + sum(plan.values())
            solute = v0 * c0 + sum(plan[n] * conc[n] for n in names)
            known_max = max([conc[n] for n in names[:self._n_known]] + ([c0] if v0 else []))
            poured = sum(plan.values())
            if (solute % volume == 0 and solute // volume > known_max + 2 and volume <= _CAPACITY
                    and poured >= 3 * self.jug - 4):
                break
        self._names, self._conc, self._plan = names, conc, plan
        self._target_v, self._target_c = volume, solute // volume
        self._vol, self._sol = Fraction(v0), Fraction(v0 * c0)
        self._turn = 0
        self._done = False
        labelled = ", ".join(f"{n} = {conc[n]}%" for n in names[:self._n_known])
        hidden = ", ".join(names[self._n_known:])
        start = (f"The tank already holds {v0} litres at {c0}%." if v0 else "The tank starts empty.")
        obs = (
            f"You are mixing a chemical solution in a tank (capacity {_CAPACITY} litres). {start}\n"
            f"Sources: {labelled}. Unlabelled source(s) {hidden}: fixed but UNKNOWN whole-number concentration.\n"
            f"Goal: end with exactly {volume} litres at exactly {self._target_c}% concentration.\n"
            f"Actions (one per turn): \\boxed{{pour S K}} pours K whole litres (1..{self.jug}, one jug) of source S, "
            f"e.g. \\boxed{{pour {names[-1]} 2}}; \\boxed{{drain K}} removes K litres of the current mixture, "
            f"e.g. \\boxed{{drain 1}}. After every action the meter shows the tank's volume and exact concentration.\n"
            f"Success: the tank matches the goal exactly (checked after each action). "
            f"Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"volume": str(self._vol), "turn": self._turn, "difficulty": self.difficulty}

    def _meter(self):
        if self._vol == 0:
            return "Meter: tank is empty."
        return f"Meter: {self._vol} litres at {_pct(self._sol / self._vol)}."

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turn += 1
        obs, reward, terminated = self._play(_content(action).lower())
        truncated = False
        if terminated:
            self._done = True
        elif self._turn >= self.max_turns:
            self._done, truncated, reward = True, True, 0.0
            obs += "\nTurn budget exhausted."
        return obs, reward, terminated, truncated, self._info()

    def _play(self, text):
        unit = r"(?:\s*(?:l|litres?|liters?))?"
        m = (re.fullmatch(r"pour\s+([a-z])\s+(\d+)" + unit, text)
             or re.fullmatch(r"(drain)\s+(\d+)" + unit, text))
        if not m:
            return ("Invalid action. Use \\boxed{pour S K} (e.g. \\boxed{pour A 3}) or \\boxed{drain K}.\n"
                    + self._meter()), -0.05, False
        what, k = m.group(1).upper(), int(m.group(2))
        if what == "DRAIN":
            if not 1 <= k <= self._vol:
                return f"Cannot drain {k} litres.\n" + self._meter(), -0.05, False
            self._sol -= self._sol * k / self._vol
            self._vol -= k
        else:
            if what not in self._conc:
                return f"No source {what}. Sources: {', '.join(self._names)}.\n" + self._meter(), -0.05, False
            if not 1 <= k <= self.jug or self._vol + k > _CAPACITY:
                return (f"Pour 1..{self.jug} litres without exceeding {_CAPACITY} litres.\n"
                        + self._meter()), -0.05, False
            self._vol += k
            self._sol += k * self._conc[what]
        if self._vol == self._target_v and self._sol == self._target_c * self._target_v:
            return self._meter() + " Target reached exactly!", 1.0, True
        return self._meter(), 0.0, False

    def solution(self):
        # Pour the planned litres (unlabelled sources first), one jug at a time.
        order = self._names[self._n_known:] + self._names[:self._n_known]
        moves = []
        for n in order:
            left = self._plan[n]
            while left > 0:
                k = min(self.jug, left)
                moves.append(f"\\boxed{{pour {n} {k}}}")
                left -= k
        return moves
