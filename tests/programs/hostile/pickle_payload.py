"""Smuggles pickles, chosen by `how`: an object whose __reduce__ would run a shell command, in
info ("reduce_object", the default); the pickled bytes of that object in info ("pickle_bytes");
the same bytes as latin-1 and base64 strings with a hint to unpickle them ("pickle_text"); and
a fake numpy scalar whose item() hook would run the command when the worker serialises it
("numpy_lookalike").

threat: pickle payloads (deserialisation that runs code in the harness)
expected: the supervisor never unpickles: objects and bytes are SandboxError(kind="invalid"),
  strings come back as inert strings; the canary file the payload would create does not exist
safety: the payload only runs `touch <canary>` on a unique /tmp path, and nothing here
  unpickles it (numpy_lookalike runs it in whatever process serialises the object)
"""
import base64
import os
import pickle

DEFAULT_CANARY = "/tmp/spade-hostile-pickle-canary"


class Payload:
    def __init__(self, canary):
        self.canary = canary

    def __reduce__(self):
        return (os.system, ("touch " + self.canary,))


class FakeScalar:
    """Claims to be numpy so a lenient encoder calls item()."""

    __module__ = "numpy"

    def __init__(self, canary):
        self.canary = canary

    def item(self):
        os.system("touch " + self.canary + "-item")
        return Payload(self.canary)


class PicklePayloadEnv:
    def __init__(self, max_turns=25, canary=DEFAULT_CANARY, how="reduce_object"):
        self.max_turns = max_turns
        self.canary = canary
        self.how = how

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        payload = Payload(self.canary)
        blob = pickle.dumps(payload)
        if self.how == "reduce_object":
            info = {"state": payload}
        elif self.how == "pickle_bytes":
            info = {"state": blob}
        elif self.how == "pickle_text":
            info = {"format": "pickle", "latin1": blob.decode("latin-1"),
                    "base64": base64.b64encode(blob).decode()}
        else:
            info = {"state": FakeScalar(self.canary)}
        return "obs", 0.0, True, False, info
