"""Find the hidden number with higher/lower feedback.

skill: Mathematical Reasoning
hint: Halve the remaining interval with every guess.
"""


class GuessEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.secret = rng.randint(1, 1000)
        self.turn = 0
        return "Guess the hidden integer in 1..1000. Reply \\boxed{n}.", {}

    def step(self, action):
        self.turn += 1
        m = re.fullmatch(r"\\boxed\{\s*(-?\d+)\s*\}", action.strip())
        if m and int(m.group(1)) == self.secret:
            return "Correct!", 1.0, True, False, {}
        if not m:
            obs = "Invalid guess: reply \\boxed{n} with an integer n."
        else:
            obs = "Higher." if int(m.group(1)) < self.secret else "Lower."
        return obs, 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        lo, hi, replies = 1, 1000, []
        while True:
            mid = (lo + hi) // 2
            replies.append("\\boxed{%d}" % mid)
            if mid == self.secret:
                return replies
            lo, hi = (mid + 1, hi) if mid < self.secret else (lo, mid - 1)
