"""Induce a hidden string-rewriting rule from worked examples and apply it to a new string.

skill: Pattern Recognition
hint: Compare lengths first (doubling, mirroring or appending changes them), then letter order (reversal, rotation, pair swaps, sorting), then letter values via alphabet offsets, which may be constant or grow with position. The rule may chain two steps; check it on every example.
difficulty: 1-3
turns: single
"""
import random
import re
import string

UP = string.ascii_uppercase


def _shift(s, k):
    return "".join(UP[(UP.index(ch) + k) % 26] for ch in s)


# name -> function; parameterised operations are expanded into one entry per parameter value
OPS = {
    "reverse": lambda s: s[::-1],
    "sort": lambda s: "".join(sorted(s)),
    "double": lambda s: "".join(ch + ch for ch in s),
    "mirror": lambda s: s + s[::-1],
    "swap_pairs": lambda s: "".join(s[i + 1] + s[i] for i in range(0, len(s) - 1, 2)) + (s[-1] if len(s) % 2 else ""),
    "evens_odds": lambda s: s[::2] + s[1::2],
    "succ_last": lambda s: s[:-1] + _shift(s[-1], 1),
    "append_first": lambda s: s + s[0],
    "pos_shift": lambda s: "".join(_shift(ch, i) for i, ch in enumerate(s)),
    "rot_left1": lambda s: s[1:] + s[:1],
    "rot_left2": lambda s: s[2:] + s[:2],
    "rot_right1": lambda s: s[-1:] + s[:-1],
    **{f"shift{k}": (lambda k: lambda s: _shift(s, k))(k) for k in (1, 2, 3, -1)},
}
NAMES = sorted(OPS)


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip().upper()


class StringAnalogyEnv:
    # steps in the rule, number of examples, word length range, attempts
    LEVELS = {1: (1, 4, (4, 6), 3), 2: (2, 4, (5, 7), 2), 3: (2, 3, (6, 8), 2)}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    @staticmethod
    def _apply(chain, s):
        for name in chain:
            s = OPS[name](s)
        return s

    def _word(self, lo, hi):
        return "".join(self._rng.choice(UP) for _ in range(self._rng.randint(lo, hi)))

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        nsteps, nex, (lo, hi), self.attempts = self.LEVELS[self.difficulty]
        hypotheses = [(a,) for a in NAMES] if nsteps == 1 else [(a, b) for a in NAMES for b in NAMES]
        while True:
            chain = tuple(self._rng.sample(NAMES, nsteps))
            if self.difficulty == 3 and not any(n.startswith(("shift", "pos_shift")) for n in chain):
                continue  # level 3 always mixes letter values with structure
            examples = [self._word(lo, hi) for _ in range(nex)]
            query = self._word(lo, hi)
            outs = [self._apply(chain, w) for w in examples]
            answer = self._apply(chain, query)
            if answer == query or any(o == w for o, w in zip(outs, examples)):
                continue
            # well-posed: every rule of the family that fits all examples agrees on the query
            fits = [h for h in hypotheses if all(self._apply(h, w) == o for w, o in zip(examples, outs))]
            # a two-step rule must not collapse into a single step (e.g. double, then swap pairs)
            simpler = nsteps == 2 and any(all(OPS[n](w) == o for w, o in zip(examples, outs)) for n in NAMES)
            if not simpler and all(self._apply(h, query) == answer for h in fits):
                break
        self.answer, self.turn, self.done = answer, 0, False
        lines = "\n".join(f"  {w} -> {o}" for w, o in zip(examples, outs))
        obs = (
            "The same hidden rule rewrites each string on the left into the string on the right "
            f"(it works on letters A-Z; the alphabet wraps around after Z):\n{lines}\n"
            f"Apply the rule to: {query}\n"
            "Answer with the resulting string, e.g. \\boxed{QWERTY}. "
            f"You have {self.attempts} attempts; a wrong answer tells you how many letters are in the right "
            "position. Success = the exact string."
        )
        return obs, {"attempts_left": self.attempts}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"attempts_left": self.attempts}
        self.turn += 1
        guess = re.sub(r"[^A-Z]", "", _parse(action))
        reward, terminated = 0.0, False
        if not guess:
            msg = "No letters found. Answer with a string of letters, e.g. \\boxed{QWERTY}."
        else:
            self.attempts -= 1
            if guess == self.answer:
                msg, reward, terminated = "Correct, that is how the rule rewrites it. You win!", 1.0, True
            else:
                right = sum(a == b for a, b in zip(guess, self.answer))
                msg = (f"Not quite: {right} letters are in the right position; the answer has "
                       f"{len(self.answer)} letters (you gave {len(guess)}). Attempts left: {self.attempts}.")
                if self.attempts == 0:
                    msg += " No attempts left. You lose."
                    terminated = True
        truncated = not terminated and self.turn >= self.max_turns
        self.done = terminated or truncated
        return msg, reward, terminated, truncated, {"attempts_left": self.attempts}

    def solution(self):
        return ["\\boxed{%s}" % self.answer]
