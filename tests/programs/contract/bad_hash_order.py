"""The secret depends on set iteration order of strings, which changes with PYTHONHASHSEED.

expect: determinism
"""

WORDS = ["apple", "brick", "cloud", "delta", "ember", "frost", "glyph", "haven"]


class SetOrderEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        words = list(set(WORDS))  # order depends on hash(str)
        self.secret = words[rng.randrange(len(words))]
        self.turn = 0
        return "Guess the secret word from: " + ", ".join(words) + ". Reply \\boxed{word}.", {}

    def step(self, action):
        self.turn += 1
        if action.strip() == "\\boxed{%s}" % self.secret:
            return "Correct!", 1.0, True, False, {}
        return "Wrong.", 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return ["\\boxed{%s}" % self.secret]
