"""Builds its puzzle from set iteration order, which depends on PYTHONHASHSEED.

threat: hash-order nondeterminism (looks deterministic under fork: every worker shares the
  zygote's hash seed)
expected: validator check "determinism" (fresh interpreters with different PYTHONHASHSEED)
safety: harmless
"""
import random

FRUITS = {"apple", "banana", "cherry", "damson", "elderberry", "fig", "grape", "honeydew",
          "kiwi", "lemon", "mango", "nectarine"}


class NondeterministicHashEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.order = []
        self.target = ""
        self.turn = 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.order = list(FRUITS)  # BUG on purpose: set order varies with the hash seed
        self.target = self.order[rng.randint(0, 3)]
        self.turn = 0
        return ("Fruits: " + ", ".join(self.order)
                + ". Which one am I thinking of? One of the first four. Answer as \\boxed{fruit}."), {}

    def step(self, action):
        self.turn += 1
        text = action.strip()[len("\\boxed{"):-1] if action.startswith("\\boxed{") else ""
        if text.strip().lower() == self.target:
            return "Correct.", 1.0, True, False, {}
        if self.turn >= 3:
            return "Out of guesses.", 0.0, True, False, {}
        return "Wrong.", 0.0, False, False, {}
