"""Continue a hidden integer sequence term by term, with higher/lower feedback on wrong guesses.

skill: Pattern Recognition
hint: Write out the first differences, then second differences, and the ratios of consecutive terms. Also test odd and even positions as two separate sequences, and whether each term depends on the previous two. A correct rule must reproduce every shown term.
difficulty: 1-3
turns: multi
"""
import random
import re


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip()


class SequenceContinuationEnv:
    # families per level, number of shown terms, lives (wrong guesses allowed)
    LEVELS = {
        1: (["arith", "geom", "square"], 6, 4),
        2: (["quad", "fib", "interleave", "alt_ops"], 6, 3),
        3: (["affine_rec", "geom_diff", "fib", "alt_ops", "cube_plus"], 5, 2),
    }
    ASKED = 4  # terms to predict

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _generate(self, family, n):
        R = self._rng
        if family == "arith":
            a, d = R.randint(-20, 40), R.choice([v for v in range(-13, 14) if abs(v) > 2])
            return [a + d * i for i in range(n)]
        if family == "geom":
            a, r = R.randint(2, 7), R.choice([2, 3, -2])
            return [a * r ** i for i in range(n)]
        if family == "square":
            a, b = R.randint(1, 4), R.randint(-10, 10)
            return [(i + a) ** 2 + b for i in range(n)]
        if family == "quad":
            a, b, c = R.randint(1, 3), R.randint(-6, 6), R.randint(-10, 20)
            return [a * i * i + b * i + c for i in range(n)]
        if family == "fib":
            s = [R.randint(1, 9), R.randint(1, 9)]
            while len(s) < n:
                s.append(s[-1] + s[-2])
            return s
        if family == "interleave":  # two arithmetic sequences at odd/even positions
            a, d, b, e = R.randint(1, 30), R.randint(3, 9), R.randint(30, 90), R.randint(-9, -2)
            return [a + d * (i // 2) if i % 2 == 0 else b + e * (i // 2) for i in range(n)]
        if family == "alt_ops":  # alternately add p and multiply by q
            s, p, q = [R.randint(1, 6)], R.randint(1, 7), R.choice([2, 3])
            while len(s) < n:
                s.append(s[-1] + p if len(s) % 2 else s[-1] * q)
            return s
        if family == "affine_rec":  # x -> a*x + b
            s, a, b = [R.randint(1, 5)], R.choice([2, 3, -2]), R.randint(-5, 5)
            while len(s) < n:
                s.append(a * s[-1] + b)
            return s
        if family == "geom_diff":  # differences form a geometric sequence
            s, d, r = [R.randint(-10, 10)], R.randint(1, 4), R.choice([2, 3])
            while len(s) < n:
                s.append(s[-1] + d * r ** (len(s) - 1))
            return s
        a = R.randint(-5, 10)  # cube_plus: n^3 + a*n
        return [i ** 3 + a * i for i in range(1, n + 1)]

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        families, shown, self.lives = self.LEVELS[self.difficulty]
        while True:
            family = self._rng.choice(families)
            seq = self._generate(family, shown + self.ASKED)
            hidden = seq[shown:]
            # keep the asked terms out of the tiny range a blind guesser would try
            if len(set(seq)) == len(seq) and all(abs(x) > 20 for x in hidden) and max(map(abs, seq)) < 10 ** 6:
                break
        self.shown, self.hidden = seq[:shown], hidden
        self.idx, self.turn, self.done = 0, 0, False
        obs = (
            f"A hidden rule generates an integer sequence. The first {shown} terms are:\n  "
            + ", ".join(map(str, self.shown))
            + f"\nPredict the next {self.ASKED} terms one at a time, each as one integer, e.g. \\boxed{{57}}.\n"
            "A correct guess is confirmed and added to the sequence; a wrong guess is answered 'too high' or "
            f"'too low' and costs a life. You have {self.lives} lives and {self.max_turns} turns.\n"
            f"Success = all {self.ASKED} terms predicted before you run out of lives.\n"
            f"Term #{shown + 1} = ?"
        )
        return obs, {"lives": self.lives, "predicted": 0}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"lives": self.lives, "predicted": self.idx}
        self.turn += 1
        text = _parse(action).replace(",", "").replace(" ", "")
        reward, terminated = 0.0, False
        if not re.fullmatch(r"[+-]?\d+", text):
            msg = f"Invalid guess '{text[:30]}'. Answer with one integer, e.g. \\boxed{{57}}."
        else:
            guess, want = int(text), self.hidden[self.idx]
            if guess == want:
                self.idx += 1
                known = self.shown + self.hidden[:self.idx]
                msg = "Correct! Sequence so far: " + ", ".join(map(str, known))
                if self.idx == len(self.hidden):
                    msg += "\nAll terms predicted. You win!"
                    reward, terminated = 1.0, True
                else:
                    msg += f"\nTerm #{len(known) + 1} = ?"
            else:
                self.lives -= 1
                msg = f"{guess} is too {'high' if guess > want else 'low'}. Lives left: {self.lives}."
                if self.lives == 0:
                    msg += " No lives left. You lose."
                    terminated = True
                else:
                    msg += f" Try term #{len(self.shown) + self.idx + 1} again."
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of turns."
        self.done = terminated or truncated
        return msg, reward, terminated, truncated, {"lives": self.lives, "predicted": self.idx}

    def solution(self):
        return ["\\boxed{%d}" % x for x in self.hidden]
