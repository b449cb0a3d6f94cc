"""Open a multi-stage vault lock: each stage adds a congruence and asks for the smallest solution.

skill: Mathematical Reasoning
hint: Chinese Remainder Theorem, built up incrementally: the previous code already satisfies the old congruences, so try previous + t*L for t = 0, 1, 2, ... where L is the lcm of the old moduli. With non-coprime moduli, work modulo the lcm.
difficulty: 1-3
turns: multi
"""
import math
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)

# difficulty -> (number of stages, modulus pool, mistakes allowed); stage 1 shows two congruences.
_LEVELS = {
    1: (3, [3, 4, 5, 7], 3),
    2: (4, [3, 4, 5, 7, 11, 13], 3),
    3: (5, [4, 6, 9, 10, 14, 15, 21, 22, 25, 35], 2),
}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


def _lcm(a, b):
    return a * b // math.gcd(a, b)


class ModularLockEnv:
    def __init__(self, max_turns=20, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.stages, self._pool, self.mistakes_allowed = _LEVELS[difficulty]
        self._done = True

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        n = self.stages + 1
        while True:
            mods = self._rng.sample(self._pool, n)
            lcms = [mods[0]]
            for m in mods[1:]:
                lcms.append(_lcm(lcms[-1], m))
            secret = self._rng.randrange(lcms[-1])
            # codes[j] = smallest solution of the first j+2 congruences
            codes = [secret % L for L in lcms[1:]]
            grows = all(lcms[i + 1] > lcms[i] for i in range(n - 1))
            if grows and codes[0] > 20 and all(codes[i + 1] > codes[i] for i in range(len(codes) - 1)):
                break
        self._mods = mods
        self._res = [secret % m for m in mods]
        self._codes = codes
        self._stage = 0
        self._mistakes = 0
        self._turn = 0
        self._opened = []
        self._done = False
        intro = (
            f"A vault lock has {self.stages} stages. At each stage you see a system of congruences and must "
            f"enter the SMALLEST non-negative integer x satisfying all of them. Opening a stage reveals one more "
            f"congruence for the next stage (earlier ones stay in force).\n"
            f"Action: the number in a box, e.g. \\boxed{{137}}. A wrong entry tells you which congruences it "
            f"violates (or that a smaller solution exists) and counts as a mistake; "
            f"{self.mistakes_allowed} mistakes jam the lock (failure). Success: open all {self.stages} stages. "
            f"Turn budget: {self.max_turns} turns.\n"
        )
        return intro + self._system(), self._info()

    def _system(self):
        k = self._stage + 2
        lines = [f"  #{i + 1}: x = {self._res[i]} (mod {self._mods[i]})" + ("   <- new" if i == k - 1 and i > 1 else "")
                 for i in range(k)]
        return f"Stage {self._stage + 1} of {self.stages}. Find the smallest x >= 0 with:\n" + "\n".join(lines)

    def _info(self):
        return {"stage": self._stage + 1, "mistakes": self._mistakes, "turn": self._turn,
                "difficulty": self.difficulty}

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
            return "Invalid entry: type one integer, e.g. \\boxed{137}.\n" + self._system(), -0.05, False
        x = int(text)
        k = self._stage + 2
        target = self._codes[self._stage]
        if x == target:
            self._opened.append(x)
            self._stage += 1
            if self._stage == self.stages:
                return f"Click! {x} opens the final stage. The vault is open.", 1.0, True
            return (f"Click! Stage {self._stage} opens with {x}. Codes so far: {self._opened}.\n"
                    + self._system()), 0.0, False
        self._mistakes += 1
        if x < 0:
            why = "x must be non-negative"
        else:
            bad = [f"#{i + 1}" for i in range(k) if x % self._mods[i] != self._res[i]]
            why = (f"{x} violates congruence(s) {', '.join(bad)}" if bad
                   else f"{x} satisfies every congruence, but a smaller non-negative solution exists")
        left = self.mistakes_allowed - self._mistakes
        if left <= 0:
            return f"Wrong: {why}. The lock jams: no mistakes left.", 0.0, True
        return f"Wrong: {why}. Mistakes left: {left}.\n" + self._system(), 0.0, False

    def solution(self):
        return [f"\\boxed{{{c}}}" for c in self._codes]
