"""A compact QuestionEnv whose generate() returns a non-string question and a bad answer.

threat: wrong types through a scaffold hook (question not a string, answer a dict)
expected: the base raises TypeError in reset; validator check "exception" (or "contract")
safety: harmless
"""


class BadValuesEnv(QuestionEnv):
    def generate(self, rng):
        return {"question": 1}, {"answer": [rng.random()]}
