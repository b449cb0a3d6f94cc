"""Returns invalid rewards, chosen by `reward`: NaN ("nan", the default), +inf, -inf, the string
"1", True, None, 100.0 (outside [-10, 10]) and 10**400 (an int JSON can carry but no float can
hold).

threat: NaN/inf/out-of-range/wrong-type rewards
expected: SandboxError(kind="invalid") for each; validator check "contract"
safety: harmless
"""
REWARDS = {
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "str": "1",
    "bool": True,
    "none": None,
    "out_of_range": 100.0,
    "bigint": 10**400,
}


class BadRewardEnv:
    def __init__(self, max_turns=25, reward="nan"):
        self.max_turns = max_turns
        self.reward = REWARDS[reward]

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        return "obs", self.reward, True, False, {}
