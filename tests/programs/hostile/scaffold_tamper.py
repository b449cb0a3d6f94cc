"""A compact QuestionEnv that rewrites its base class so that every answer is correct.

threat: tampering with the scaffold base class at import time (check always True, the
  comparison helper replaced through the method's globals)
expected: the change stays in this file's own copy of the base; every probe wins, so validator
  check "not_trivial"
safety: harmless
"""

QuestionEnv.check = lambda self, given: True
QuestionEnv.reset.__globals__["_spade_same"] = lambda given, expected: True


class TamperedEnv(QuestionEnv):
    def generate(self, rng):
        a = rng.randint(100, 999)
        return f"What is {a} + {a}?", 2 * a
