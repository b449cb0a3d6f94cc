"""Draws the secret from the global random state instead of random.Random(seed).

Two checks fail, both for the one cause: fresh interpreters draw different secrets
(determinism), and solution() is replayed in another worker, where the global state differs
too (every fork reseeds it), so the replayed solution misses (solvable).

expect: determinism, solvable
"""


class UnseededEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.secret = random.randint(1, 1000)  # global state: the bug
        self.turn = 0
        return "Guess the number in 1..1000: \\boxed{n}. Feedback: your distance.", {}

    def step(self, action):
        self.turn += 1
        m = re.fullmatch(r"\\boxed\{\s*(-?\d+)\s*\}", action.strip())
        if not m:
            return "Invalid guess.", 0.0, False, self.turn >= self.max_turns, {}
        if int(m.group(1)) == self.secret:
            return "Correct!", 1.0, True, False, {}
        off = abs(int(m.group(1)) - self.secret)
        return "Off by %d." % off, 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return ["\\boxed{%d}" % self.secret]
