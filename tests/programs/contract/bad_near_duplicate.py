"""A near copy of good_guess.py: renamed literals do not make a new environment.

expect: near_duplicate
pool: good_guess.py
"""


class GuessEnv:
    def __init__(self, max_turns=30):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.secret = rng.randint(1, 500)
        self.turn = 0
        return "Find my secret number between 1 and 500 and reply \\boxed{n}.", {}

    def step(self, action):
        self.turn += 1
        m = re.fullmatch(r"\\boxed\{\s*(-?\d+)\s*\}", action.strip())
        if m and int(m.group(1)) == self.secret:
            return "Well done!", 1.0, True, False, {}
        if not m:
            obs = "Bad guess: write \\boxed{n}."
        else:
            obs = "Go up." if int(m.group(1)) < self.secret else "Go down."
        return obs, 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        lo, hi, replies = 1, 500, []
        while True:
            mid = (lo + hi) // 2
            replies.append("\\boxed{%d}" % mid)
            if mid == self.secret:
                return replies
            lo, hi = (mid + 1, hi) if mid < self.secret else (lo, mid - 1)
