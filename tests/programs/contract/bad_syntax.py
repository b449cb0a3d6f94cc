"""A syntax error: the file cannot be parsed.

expect: parse
"""


class BrokenEnv:
    def reset(self, seed=None)
        return "", {}
