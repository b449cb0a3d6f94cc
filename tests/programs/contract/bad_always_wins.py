"""Every reply wins: the task is trivial.

expect: not_trivial
"""


class FreeLunchEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        return "Say anything.", {}

    def step(self, action):
        return "You win!", 1.0, True, False, {}

    def solution(self):
        return ["\\boxed{anything}"]
