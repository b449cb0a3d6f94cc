"""Returns the right arity with wrong types, chosen by `field`: terminated=1 ("terminated_int",
the default), truncated="no", info as a list, the observation as an int, the observation as
None, and a reset info that is a string.

threat: wrong-type returns
expected: SandboxError(kind="invalid") for each; validator check "contract"
safety: harmless
"""


class WrongTypesEnv:
    def __init__(self, max_turns=25, field="terminated_int"):
        self.max_turns = max_turns
        self.field = field

    def reset(self, seed=None):
        if self.field == "reset_info_str":
            return "Guess a digit 0-9 as \\boxed{d}.", "info"
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        obs, reward, terminated, truncated, info = "obs", 0.0, True, False, {}
        if self.field == "terminated_int":
            terminated = 1
        elif self.field == "truncated_str":
            truncated = "no"
        elif self.field == "info_list":
            info = ["reward", 1.0]
        elif self.field == "obs_int":
            obs = 7
        elif self.field == "obs_none":
            obs = None
        return obs, reward, terminated, truncated, info
