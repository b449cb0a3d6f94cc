"""Name the next number of an arithmetic sequence; the game leaves the turn limit to the runner."""


class NextTermEnv:
    def __init__(self):
        self.max_turns = 4

    def reset(self, seed=None):
        rng = random.Random(seed)
        start, step = rng.randint(1, 50), rng.randint(2, 9)
        self.terms = [start + step * i for i in range(5)]
        self.answer = self.terms[-1] + step
        return f"Sequence: {', '.join(map(str, self.terms))}. Next term? Reply \\boxed{{N}}.", {}

    def step(self, action):
        match = re.search(r"-?\d+", action)
        if match and int(match.group()) == self.answer:
            return "Correct!", 1.0, True, False, {}
        return "Not quite.", 0.0, False, False, {}

    def solution(self):
        return f"\\boxed{{{self.answer}}}"
