"""Imports a module that does not exist.

threat: missing import
expected: Sandbox.open raises SandboxError(kind="exception") naming ModuleNotFoundError;
  validator check "load"
safety: harmless
"""
import nonexistent_module_spade_hostile


class MissingImportEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return nonexistent_module_spade_hostile.prompt(), {}

    def step(self, action):
        return "Wrong.", 0.0, True, False, {}
