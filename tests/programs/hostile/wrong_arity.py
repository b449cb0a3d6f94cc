"""Returns tuples of the wrong length, chosen by `shape`: a 4-tuple step (old gym API,
"step4", the default), a 6-tuple step, a 3-tuple reset, a bare-string reset, a dict step and
None from step.

threat: wrong-arity returns
expected: SandboxError(kind="invalid") for each; validator check "contract"
safety: harmless
"""


class WrongArityEnv:
    def __init__(self, max_turns=25, shape="step4"):
        self.max_turns = max_turns
        self.shape = shape

    def reset(self, seed=None):
        if self.shape == "reset3":
            return "Guess a digit 0-9 as \\boxed{d}.", {}, 0
        if self.shape == "reset_str":
            return "Guess a digit 0-9 as \\boxed{d}."
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        if self.shape == "step4":
            return "obs", 0.0, True, {}
        if self.shape == "step6":
            return "obs", 0.0, True, False, {}, "extra"
        if self.shape == "step_dict":
            return {"observation": "obs", "reward": 1.0, "terminated": True}
        if self.shape == "step_none":
            return None
        return "obs", 0.0, True, False, {}
