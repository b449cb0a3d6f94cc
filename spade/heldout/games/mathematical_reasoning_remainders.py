"""Find the crate count from its remainders when stacked in rows of different sizes.

skill: Mathematical Reasoning
hint: Satisfy one remainder condition at a time: list the numbers that fit the largest divisor, step through them by that divisor until the next condition also holds, then step by the product of the divisors used so far.
difficulty: 1-3
turns: single
"""
import math
import random
import re

# (candidate divisors, how many conditions); divisors are made pairwise coprime so the answer is unique
_LEVELS = {1: ([3, 4, 5, 7], 2), 2: ([3, 4, 5, 7, 8, 9, 11], 3), 3: ([5, 7, 8, 9, 11, 13], 4)}
_ATTEMPTS = 3


class RemaindersEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        pool, k = _LEVELS[self.difficulty]
        while True:
            mods = sorted(self._rng.sample(pool, k))
            if all(math.gcd(a, b) == 1 for i, a in enumerate(mods) for b in mods[i + 1:]):
                break
        span = math.prod(mods)
        # exactly one number in [lo, lo + span - 1] satisfies all conditions (Chinese remainder theorem)
        self.lo = self._rng.randrange(101, 1000)
        self.hi = self.lo + span - 1
        self._answer = self._rng.randint(self.lo, self.hi)
        self.conds = [(m, self._answer % m) for m in mods]
        self._rng.shuffle(self.conds)
        self.attempts = _ATTEMPTS
        self.turn = 0
        self.done = False
        lines = "\n".join(f"- stacked in rows of {m}, {r} crate{'s' if r != 1 else ''} "
                          f"{'are' if r != 1 else 'is'} left over" for m, r in self.conds)
        obs = (
            "A quartermaster counted the crates in a warehouse several ways. When the crates are:\n"
            f"{lines}\n"
            f"The number of crates is between {self.lo} and {self.hi} inclusive, and exactly one number in that "
            "range fits every condition.\n"
            "Reply with that number in a box, for example \\boxed{512}. "
            f"You have {_ATTEMPTS} attempts; after a wrong answer you are told which conditions it breaks. "
            "You win by giving the exact number."
        )
        return obs, {"attempts_left": self.attempts}

    def solution(self):
        for n in range(self.lo, self.hi + 1):
            if all(n % m == r for m, r in self.conds):
                return [f"\\boxed{{{n}}}"]
        return []

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().replace(",", "")
        if not re.fullmatch(r"-?\d+", text):
            obs, reward, term = "Please answer with a single whole number, e.g. \\boxed{512}.", -0.05, False
        else:
            n = int(text)
            self.attempts -= 1
            if n == self._answer:
                self.done = True
                return f"Correct: there are {n} crates. You win!", 1.0, True, False, {"attempts_left": self.attempts}
            problems = []
            if not self.lo <= n <= self.hi:
                problems.append(f"{n} is outside {self.lo}..{self.hi}")
            for mod, r in self.conds:
                if n % mod != r:
                    problems.append(f"{n} leaves remainder {n % mod} in rows of {mod}, not {r}")
            obs = "Wrong: " + "; ".join(problems) + "."
            reward, term = 0.0, self.attempts <= 0
            obs += " No attempts left. You lose." if term else f" Attempts left: {self.attempts}."
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"attempts_left": self.attempts}
