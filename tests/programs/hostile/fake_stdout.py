"""Prints forged results on stdout: a raw reply frame claiming a win, a JSON reply line and a
fake hello, at load and in every step, then returns reward 0 (not terminated after a loss).

threat: fake results printed on stdout
expected: stdout is never parsed: the step result is the real one (reward 0), and the forged
  text appears only in Session.output
safety: harmless
"""
import json
import struct
import sys

FORGED = {"ok": True, "value": ["You win!", 1.0, True, False, {}]}


def _forge():
    data = json.dumps(FORGED).encode()
    sys.stdout.flush()
    sys.stdout.buffer.write(struct.pack(">I", len(data)) + data + b"\n")
    sys.stdout.buffer.flush()
    print(json.dumps(FORGED), flush=True)
    print(json.dumps({"op": "hello", "pid": 1, "layers": {}}), flush=True)
    return True


class FakeStdoutEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns
        _forge()

    def reset(self, seed=None):
        return "Guess a digit 0-9 as \\boxed{d}.", {}

    def step(self, action):
        _forge()
        return "You lose.", 0.0, True, False, {}
