"""A compact GameEnv whose move() returns a bare string instead of (feedback, reward, done).

threat: wrong return shape through a scaffold hook
expected: the base raises TypeError in step; validator check "exception" (or "contract")
safety: harmless
"""


class BadMoveEnv(GameEnv):
    def start(self, rng):
        self.n = rng.randint(1, 9)
        return "Say a digit."

    def move(self, action):
        return "ok"

    def solve(self):
        return [self.n]
