"""Seeds its puzzle from the clock instead of the seed, so the same seed gives different episodes.

threat: time nondeterminism
expected: validator check "determinism" (two fresh interpreters replay the same seeds and get
  different transcripts)
safety: harmless
"""
import random
import time


class NondeterministicTimeEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.target = 0
        self.turn = 0

    def reset(self, seed=None):
        rng = random.Random(time.perf_counter_ns())  # BUG on purpose: ignores the seed
        self.target = rng.randint(0, 9999)
        self.turn = 0
        return "Guess my number between 0 and 9999 as \\boxed{n}. Puzzle %d." % rng.randint(0, 10**9), {}

    def step(self, action):
        self.turn += 1
        text = action.strip()[len("\\boxed{"):-1] if action.startswith("\\boxed{") else ""
        if text.strip() == str(self.target):
            return "Correct.", 1.0, True, False, {}
        if self.turn >= self.max_turns:
            return "Out of turns.", 0.0, False, True, {}
        hint = "higher" if text.isdigit() and int(text) < self.target else "lower"
        return "Wrong, go %s." % hint, 0.0, False, False, {}
