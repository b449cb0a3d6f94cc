"""Returns values that are not JSON, chosen by `kind`: a set as the observation ("set_obs", the
default), an arbitrary object in info ("object_info"), bytes in info ("bytes_info"), a set in
info ("set_info"), a generator as the whole step result ("generator"), and a self-referencing
info dict ("cycle").

threat: non-JSON results
expected: SandboxError(kind="invalid") (the worker reports them unserialisable); the session
  stays usable; validator check "contract"
safety: harmless
"""


class Opaque:
    def __repr__(self):
        return "Opaque()"


class NonJsonEnv:
    def __init__(self, max_turns=25, kind="set_obs"):
        self.max_turns = max_turns
        self.kind = kind

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        if action == "\\boxed{plain}":
            return "plain", 0.0, True, False, {}
        if self.kind == "set_obs":
            return {"a", "b"}, 0.0, True, False, {}
        if self.kind == "object_info":
            return "obs", 0.0, True, False, {"o": Opaque()}
        if self.kind == "bytes_info":
            return "obs", 0.0, True, False, {"b": b"\x80\x04"}
        if self.kind == "set_info":
            return "obs", 0.0, True, False, {"s": {1, 2}}
        if self.kind == "generator":
            return (x for x in ("obs", 0.0, True, False, {}))
        info = {}
        info["self"] = info
        return "obs", 0.0, True, False, info
