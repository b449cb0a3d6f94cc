"""Work out which switch drives each lamp using a small number of switch experiments.

skill: Causal Inference
hint: Give every switch a different on/off pattern across your experiments (like binary codes); each lamp's on/off history then names its switch. If a lamp may be inverted, never use two patterns that are exact opposites of each other.
difficulty: 1-3
turns: multi
"""
import random
import re

# (switches, lamps, experiments allowed, some lamps may be inverted)
_LEVELS = {1: (4, 3, 3, False), 2: (6, 4, 3, False), 3: (8, 5, 4, True)}
_LAMPS = "ABCDE"


class SwitchboardEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.s, self.l, self.budget, self.invert = _LEVELS[self.difficulty]
        # each lamp listens to one switch (several lamps may share one; some switches are dummies)
        self._wire = [self._rng.randrange(self.s) for _ in range(self.l)]
        self._neg = [self.invert and self._rng.random() < 0.4 for _ in range(self.l)]
        self.used = 0
        self.turn = 0
        self.done = False
        inv = ("Some lamps are wired INVERTED: lit when their switch is OFF and dark when it is ON. "
               if self.invert else "Each lamp is lit exactly when its switch is ON. ")
        obs = (
            f"A control panel has {self.s} switches (1..{self.s}) and {self.l} lamps ({', '.join(_LAMPS[:self.l])}). "
            "Each lamp is driven by exactly one switch; a switch may drive several lamps or none. "
            f"{inv}\nRun an experiment by setting every switch at once, one digit per switch in order 1..{self.s} "
            f"(1 = ON, 0 = OFF): \\boxed{{set {'10' * (self.s // 2)}}}. You then see which lamps are lit.\n"
            f"You may run at most {self.budget} experiments. Then name each lamp's switch, in lamp order "
            f"{', '.join(_LAMPS[:self.l])}; on a panel with only two lamps, \\boxed{{answer 4 1}} would mean lamp A "
            "is driven by switch 4 and lamp B by switch 1.\n"
            f"You get one answer and win only if every lamp is right. You have {self.max_turns} turns."
        )
        return obs, {"experiments_left": self.budget}

    def _lamps(self, bits):
        return [bits[w] != neg for w, neg in zip(self._wire, self._neg)]

    def solution(self):
        # experiment j sets switch i to bit j of a distinct code; with inverted lamps, codes must not
        # include a pattern and its complement, which costs one extra experiment
        n = (self.s - 1).bit_length() + self.invert
        full = 2 ** n - 1
        codes = [c for c in range(2 ** n) if not self.invert or c < full - c][:self.s]
        exps = [[(codes[i] >> j) & 1 for i in range(self.s)] for j in range(n)]
        # decode from the lamps the experiments would show (the same reasoning a player would do)
        seen = [self._lamps(e) for e in exps]
        answer = []
        for lamp in range(self.l):
            pattern = sum(seen[j][lamp] << j for j in range(n))
            for i, c in enumerate(codes):
                if pattern == c or (self.invert and pattern == full - c):
                    answer.append(i + 1)
                    break
        return ([f"\\boxed{{set {''.join(map(str, e))}}}" for e in exps]
                + [f"\\boxed{{answer {' '.join(map(str, answer))}}}"])

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        sm = re.fullmatch(r"set\s*([01][01\s,]*)", text)
        am = re.fullmatch(r"answer\s*([\d\s,]+)", text)
        term, reward = False, 0.0
        if sm:
            bits = [int(ch) for ch in re.sub(r"[\s,]", "", sm.group(1))]
            if len(bits) != self.s:
                obs = f"Give exactly {self.s} digits (0/1), one per switch."
            elif self.used >= self.budget:
                obs = "No experiments left; give your answer."
            else:
                self.used += 1
                lit = [_LAMPS[i] for i, on in enumerate(self._lamps(bits)) if on]
                obs = (f"Experiment {self.used}/{self.budget} with switches {''.join(map(str, bits))}: "
                       f"lit lamps: {', '.join(lit) if lit else 'none'}.")
        elif am:
            guess = [int(x) for x in re.findall(r"\d+", am.group(1))]
            if len(guess) != self.l or not all(1 <= g <= self.s for g in guess):
                obs = f"Give {self.l} switch numbers between 1 and {self.s}, one per lamp."
            else:
                term = True
                right = sum(g - 1 == w for g, w in zip(guess, self._wire))
                if right == self.l:
                    self.done = True
                    return "Every lamp is matched to its switch. You win!", 1.0, True, False, {"experiments_left": self.budget - self.used}
                obs = f"Only {right} of {self.l} lamps are matched correctly. You lose."
        else:
            obs, reward = "Unrecognised action. Use \\boxed{set 1010...} or \\boxed{answer 2 4 ...}.", -0.05
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"experiments_left": self.budget - self.used}
