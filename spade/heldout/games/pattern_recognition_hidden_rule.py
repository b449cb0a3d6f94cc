"""Discover a hidden rule about numbers by testing examples, then classify a quiz list.

skill: Pattern Recognition
hint: Write down what the YES examples share that the NO examples lack (divisors, last digit, digits used, size). Test numbers that split your remaining theories, e.g. near a suspected boundary or sharing one digit but not another.
difficulty: 1-3
turns: multi
"""
import random
import re

_PRIMES = {p for p in range(2, 100) if all(p % q for q in range(2, p))}


def _simple_rules(rng):
    """One random instance of each simple rule family: (name, predicate over 1..99)."""
    k = rng.randint(3, 9)
    a, b = sorted(rng.sample(range(10), 2))
    lo = rng.randint(10, 60)
    hi = lo + rng.randint(12, 30)
    d = rng.randint(1, 9)
    return [
        (f"multiple of {k}", lambda x, k=k: x % k == 0),
        (f"last digit {a} or {b}", lambda x, a=a, b=b: x % 10 in (a, b)),
        (f"between {lo} and {hi}", lambda x, lo=lo, hi=hi: lo <= x <= hi),
        (f"contains digit {d}", lambda x, d=d: str(d) in str(x)),
        ("prime", lambda x: x in _PRIMES),
        ("tens digit > ones digit", lambda x: x // 10 > x % 10),
        ("digit sum even", lambda x: (x // 10 + x % 10) % 2 == 0),
    ]


# (rule families allowed, number of free tests, quiz size)
_LEVELS = {1: ([0, 2, 3], 8, 6), 2: ([0, 1, 2, 3, 4, 5, 6], 6, 8), 3: (None, 6, 8)}


class HiddenRuleEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        fams, self.tests, qsize = _LEVELS[self.difficulty]
        while True:
            rules = _simple_rules(self._rng)
            if fams is not None:
                self._name, self._rule = rules[self._rng.choice(fams)]
            else:  # level 3: two simple rules joined by AND / OR
                (n1, f1), (n2, f2) = self._rng.sample(rules, 2)
                if self._rng.random() < 0.5:
                    self._name, self._rule = f"{n1} AND {n2}", lambda x, f1=f1, f2=f2: f1(x) and f2(x)
                else:
                    self._name, self._rule = f"{n1} OR {n2}", lambda x, f1=f1, f2=f2: f1(x) or f2(x)
            yes = [x for x in range(1, 100) if self._rule(x)]
            no = [x for x in range(1, 100) if not self._rule(x)]
            if len(yes) >= qsize // 2 + 2 and len(no) >= qsize // 2 + 2:
                break
        # two shown examples of each kind, then a quiz of half YES and half NO in random order
        picks = self._rng.sample(yes, qsize // 2 + 2), self._rng.sample(no, qsize // 2 + 2)
        self.shown = sorted(picks[0][:2] + picks[1][:2])
        self.quiz = picks[0][2:] + picks[1][2:]
        self._rng.shuffle(self.quiz)
        self.asked = {}
        self.turn = 0
        self.done = False
        kinds = ("multiples of a number, a set of allowed last digits, a range of values, containing a digit, primes, "
                 "tens digit bigger than ones digit, even digit sum")
        if self.difficulty == 1:
            kinds = "multiples of a number, a range of values, or containing a given digit"
        elif self.difficulty == 3:
            kinds = "two simple rules joined by AND or OR; the simple kinds are " + kinds
        ex = ", ".join(f"{x}: {'YES' if self._rule(x) else 'NO'}" for x in self.shown)
        obs = (
            f"A secret rule says YES or NO to each whole number from 1 to 99. The rule is one of these kinds: {kinds}.\n"
            f"Known examples: {ex}.\n"
            f"Quiz list: {', '.join(map(str, self.quiz))}.\n"
            f"You may test up to {self.tests} other numbers (not from the quiz list), one per reply: \\boxed{{test 57}}.\n"
            f"Then classify the quiz list in order with one letter each (Y or N): e.g. for a 4-number quiz \\boxed{{answer YNNY}}"
            f". You get one answer and win only if every letter is right. You have {self.max_turns} turns."
        )
        return obs, {"tests_left": self.tests}

    def solution(self):
        # probe a few informative numbers (not quiz numbers), then answer with the true labels
        free = [x for x in range(1, 100) if x not in self.quiz and x not in self.shown]
        step = max(1, len(free) // 4)
        probes = [free[i] for i in range(step // 2, len(free), step)][:3]
        labels = "".join("Y" if self._rule(x) else "N" for x in self.quiz)
        return [f"\\boxed{{test {x}}}" for x in probes] + [f"\\boxed{{answer {labels}}}"]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        tm = re.fullmatch(r"test\s+(\d+)", text)
        am = re.fullmatch(r"answer\s+([yn\s,]+)", text)
        term, reward = False, 0.0
        left = self.tests - len(self.asked)
        if tm:
            x = int(tm.group(1))
            if not 1 <= x <= 99:
                obs = "Test numbers must be between 1 and 99."
            elif x in self.quiz:
                obs = f"{x} is on the quiz list; test a different number."
            elif x in self.asked or x in self.shown:
                obs = f"{x} is already known: {'YES' if self._rule(x) else 'NO'}."
            elif left <= 0:
                obs = "No tests left; give your answer."
            else:
                self.asked[x] = self._rule(x)
                left -= 1
                obs = f"{x}: {'YES' if self.asked[x] else 'NO'}. Tests left: {left}."
        elif am:
            letters = re.sub(r"[\s,]", "", am.group(1))
            if len(letters) != len(self.quiz):
                obs = f"Give exactly {len(self.quiz)} letters, one per quiz number."
            else:
                term = True
                right = sum((c == "y") == self._rule(x) for c, x in zip(letters, self.quiz))
                if right == len(self.quiz):
                    self.done = True
                    return f"Every quiz number is classified correctly. The rule was: {self._name}. You win!", 1.0, True, False, {"tests_left": left}
                obs = f"Only {right} of {len(self.quiz)} quiz numbers are classified correctly. The rule was: {self._name}. You lose."
        else:
            obs, reward = "Unrecognised action. Use \\boxed{test 57} or \\boxed{answer YNNY...}.", -0.05
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"tests_left": left}
