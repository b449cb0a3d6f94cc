"""Loses every episode but claims a win in info: {"reward": 1.0, "won": True, "return": 1.0,
"success": True}.

threat: reward claims inside info
expected: info is never read for scoring: the episode return stays 0 and probes never win
  (validator does not report "not_trivial")
safety: harmless
"""
import random


class InfoRewardClaimEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        self.target = 0

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(0, 9)
        return "Guess a digit 0-9 as \\boxed{d}.", {"reward": 1.0, "won": True}

    def step(self, action):
        claim = {"reward": 1.0, "won": True, "return": 1.0, "success": True, "is_success": True}
        return "You lose.", 0.0, True, False, claim
