"""Identify the food that causes a rash from a diary of meals and reactions.

skill: Causal Inference
hint: A cause must be present (at the right delay) on every rash day and absent on every clear day. Rule out candidates with a single counterexample day; foods that always appear together are separated only by the days where one is eaten without the other.
difficulty: 1-3
turns: single
"""
import itertools
import random
import re

_FOODS = ["apple", "bread", "cheese", "eggs", "fish", "garlic", "honey", "lentils", "mango", "nuts", "oats",
          "peppers", "rice", "shrimp", "tomato", "yogurt"]
# (foods in the diary, days, foods per meal, causal model: "single", "delay" or "pair")
_LEVELS = {1: (6, 8, (2, 3), "single"), 2: (8, 10, (3, 4), "delay"), 3: (8, 12, (3, 5), "pair")}
_ATTEMPTS = 2


class FoodDiaryEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _predict(self, hyp, day):
        """Rash on `day` under hypothesis (foods, lag): all foods eaten `lag` days earlier."""
        foods, lag = hyp
        return day - lag >= 0 and all(f in self.meals[day - lag] for f in foods)

    def _hypotheses(self):
        singles = [((f,), lag) for f in self.foods for lag in ((0, 1) if self.model == "delay" else (0,))]
        pairs = [(p, 0) for p in itertools.combinations(self.foods, 2)] if self.model == "pair" else []
        return singles + pairs

    def _counterexample(self, hyp):
        for day in range(self.days):
            if self._predict(hyp, day) != self.rash[day]:
                return day
        return None

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        nfood, self.days, (lo, hi), self.model = _LEVELS[self.difficulty]
        while True:
            self.foods = sorted(self._rng.sample(_FOODS, nfood))
            self.meals = [sorted(self._rng.sample(self.foods, self._rng.randint(lo, hi))) for _ in range(self.days)]
            if self.model == "pair":
                self._cause = (tuple(sorted(self._rng.sample(self.foods, 2))), 0)
            else:
                self._cause = ((self._rng.choice(self.foods),), self._rng.choice((0, 1)) if self.model == "delay" else 0)
            self.rash = [self._predict(self._cause, d) for d in range(self.days)]
            if not 2 <= sum(self.rash) <= self.days - 2:
                continue
            # the diary must single out the true cause among every hypothesis of the model
            if [h for h in self._hypotheses() if self._counterexample(h) is None] == [self._cause]:
                break
        self.attempts = _ATTEMPTS
        self.turn = 0
        self.done = False
        diary = "\n".join(f"  Day {d + 1:2d}: {', '.join(m):34s} -> {'RASH' if r else 'no rash'}"
                          for d, (m, r) in enumerate(zip(self.meals, self.rash)))
        rule = {
            "single": "Exactly one of these foods causes the rash: it appears on a day exactly when that food was eaten that day.",
            "delay": ("Exactly one of these foods causes the rash, always with the same delay: either on the same day it is "
                      "eaten, or on the following day (you must work out which). Before day 1 none of the foods was eaten."),
            "pair": ("The rash is caused by a combination of exactly two foods: it appears on a day exactly when BOTH were "
                     "eaten that day (either one alone is harmless)."),
        }[self.model]
        fmt = "\\boxed{rice and fish}" if self.model == "pair" else "\\boxed{rice}"
        obs = (
            f"A patient kept a food diary ({', '.join(self.foods)}):\n{diary}\n{rule}\n"
            f"Name the cause, e.g. {fmt}. You have {_ATTEMPTS} attempts; after a wrong one you are shown a diary day "
            "that contradicts it. You win by naming the true cause."
        )
        return obs, {"attempts_left": self.attempts}

    def solution(self):
        return ["\\boxed{" + " and ".join(self._cause[0]) + "}"]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        named = sorted({w for w in re.findall(r"[a-z]+", text) if w in self.foods})
        want = 2 if self.model == "pair" else 1
        term, reward = False, 0.0
        if len(named) != want:
            obs = f"Name exactly {want} food{'s' if want > 1 else ''} from the diary list: {', '.join(self.foods)}."
            reward = -0.05
        elif tuple(named) == self._cause[0]:
            self.done = True
            return "Correct, that is the cause of the rash. You win!", 1.0, True, False, {"attempts_left": self.attempts - 1}
        else:
            self.attempts -= 1
            notes = []
            for lag in ((0, 1) if self.model == "delay" else (0,)):
                day = self._counterexample((tuple(named), lag))
                when = {0: "", 1: " (with a next-day effect)"}[lag] if self.model == "delay" else ""
                expect = self._predict((tuple(named), lag), day)
                notes.append(f"day {day + 1}{when} would have {'a rash' if expect else 'no rash'}, "
                             f"but the diary says {'RASH' if self.rash[day] else 'no rash'}")
            obs = f"Wrong: if {' and '.join(named)} were the cause, " + "; ".join(notes) + "."
            term = self.attempts <= 0
            obs += " No attempts left. You lose." if term else f" Attempts left: {self.attempts}."
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"attempts_left": self.attempts}
