"""Returns oversized results, chosen by `size`: an observation just over the 20,000-character
limit ("over_limit", the default), an observation of 5 million characters ("frame", bigger than
the 1 MiB reply-frame cap), or a small observation with a 5 MB info dict ("info").

threat: huge observation / oversized reply
expected: "over_limit" is SandboxError(kind="invalid"); "frame" and "info" are
  SandboxError(kind="protocol") and the worker is killed before the supervisor buffers the payload;
  validator check "contract"
safety: allocates at most 10 MB
"""


class HugeObservationEnv:
    def __init__(self, max_turns=25, size="over_limit"):
        self.max_turns = max_turns
        self.size = size

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        if self.size == "over_limit":
            return "x" * 20_001, 0.0, True, False, {}
        if self.size == "frame":
            return "x" * 5_000_000, 0.0, True, False, {}
        return "ok", 0.0, True, False, {"blob": "y" * 5_000_000}
