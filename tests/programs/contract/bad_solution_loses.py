"""solution() returns a wrong guess: the claimed solution does not win.

expect: solvable
"""


class WrongAnswerEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 1000)
        self.turn = 0
        return "Guess the number in 1..1000: \\boxed{n}.", {}

    def step(self, action):
        self.turn += 1
        m = re.fullmatch(r"\\boxed\{\s*(-?\d+)\s*\}", action.strip())
        if m and int(m.group(1)) == self.secret:
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return ["\\boxed{%d}" % (self.secret + 1)]
