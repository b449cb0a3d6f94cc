"""Probe a hidden list transformation with your own inputs, then predict its outputs on fresh test lists.

skill: Pattern Recognition
hint: Design queries that isolate one effect at a time: a sorted list like 1 2 3 4 5 shows reordering, repeated values like 5 5 5 5 show arithmetic on values, and lists of different lengths show position effects. Check your rule against every observed pair before saying ready.
difficulty: 1-3
turns: multi
"""
import random
import re


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip().lower()


def _make_op(rng, kind):
    """Returns a function list[int] -> list[int] for one elementary operation."""
    if kind == "reverse":
        return lambda xs: xs[::-1]
    if kind == "sort_up":
        return lambda xs: sorted(xs)
    if kind == "sort_down":
        return lambda xs: sorted(xs, reverse=True)
    if kind == "add":
        k = rng.randint(1, 5)
        return lambda xs: [x + k for x in xs]
    if kind == "mul":
        k = rng.randint(2, 3)
        return lambda xs: [x * k for x in xs]
    if kind == "rotate":
        k = rng.randint(1, 2)
        return lambda xs: xs[k % len(xs):] + xs[:k % len(xs)]
    if kind == "square":
        return lambda xs: [x * x for x in xs]
    if kind == "add_index":  # add the 1-based position
        return lambda xs: [x + i + 1 for i, x in enumerate(xs)]
    if kind == "prefix_sum":
        return lambda xs: [sum(xs[:i + 1]) for i in range(len(xs))]
    if kind == "swap_pairs":
        return lambda xs: [xs[i ^ 1] if (i ^ 1) < len(xs) else xs[i] for i in range(len(xs))]
    if kind == "append_sum":
        return lambda xs: xs + [sum(xs)]
    if kind == "every_other":  # keep 1st, 3rd, 5th, ...
        return lambda xs: xs[::2]
    if kind == "double_each":
        return lambda xs: [y for x in xs for y in (x, x)]
    return lambda xs: [abs(xs[i] - xs[i - 1]) for i in range(1, len(xs))] or xs  # abs_diffs


BASIC = ["reverse", "sort_up", "sort_down", "add", "mul", "rotate", "square"]
STRUCT = ["add_index", "prefix_sum", "swap_pairs", "append_sum", "every_other", "double_each", "abs_diffs"]


class HiddenRuleEnv:
    # number of composed ops and their pools, max queries, test cases, wrong answers allowed
    LEVELS = {1: ([BASIC], 6, 2, 2), 2: ([STRUCT + BASIC], 6, 3, 1), 3: ([BASIC + STRUCT, STRUCT], 5, 3, 1)}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _rule(self, xs):
        for op in self._ops:
            xs = op(list(xs))
        return xs

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        pools, self.queries_left, ntests, self.mistakes_left = self.LEVELS[self.difficulty]
        while True:
            kinds = [self._rng.choice(pool) for pool in pools]
            self._ops = [_make_op(self._rng, k) for k in kinds]
            self.tests = [[self._rng.randint(0, 9) for _ in range(self._rng.randint(5, 6))] for _ in range(ntests)]
            # every test output must differ from its input, so copying the input never wins
            if len(set(kinds)) == len(kinds) and all(self._rule(t) != t for t in self.tests):
                break
        self.phase, self.idx, self.turn, self.done = "explore", 0, 0, False
        self.history = []
        obs = (
            "A hidden rule transforms a list of integers into another list of integers.\n"
            f"Phase 1 (explore): send up to {self.queries_left} query lists and see the rule's output, e.g. "
            "\\boxed{query 3 1 4 1 5} (1 to 8 integers from 0 to 99).\n"
            "Say \\boxed{ready} to start phase 2 (it also starts automatically when your queries run out).\n"
            f"Phase 2 (test): you get {ntests} new lists one at a time and must give the rule's output for "
            "each, e.g. \\boxed{4 1 3}. "
            f"You may make {self.mistakes_left} wrong prediction(s) in total; one more and you lose.\n"
            f"You have {self.max_turns} turns. Success = all test outputs predicted."
        )
        return obs, self._info()

    def _info(self):
        return {"phase": self.phase, "queries_left": self.queries_left, "solved_tests": self.idx}

    def _test_prompt(self):
        return f"Test {self.idx + 1}/{len(self.tests)}: input [{' '.join(map(str, self.tests[self.idx]))}] -> output?"

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, self._info()
        self.turn += 1
        cmd = _parse(action)
        # a query is "query 3 1 4" or just "3 1 4" (separators required: no regex backtracking blow-up)
        m = re.fullmatch(r"(?:query\s*:?\s*)?((?:\d+[\s,]+)*\d+)", cmd)
        xs = [int(v) for v in re.findall(r"\d+", m.group(1))] if m else []
        reward, terminated = 0.0, False
        if self.phase == "explore":
            if cmd == "ready":
                self.phase = "test"
                msg = "Entering the test phase.\n" + self._test_prompt()
            elif 1 <= len(xs) <= 8 and max(xs) < 100:
                out = self._rule(xs)
                self.queries_left -= 1
                self.history.append(f"[{' '.join(map(str, xs))}] -> [{' '.join(map(str, out))}]")
                msg = "Observations so far:\n" + "\n".join(self.history) + f"\nQueries left: {self.queries_left}."
                if self.queries_left == 0:
                    self.phase = "test"
                    msg += "\nNo queries left; entering the test phase.\n" + self._test_prompt()
            else:
                msg = "Invalid action. Send \\boxed{query 2 7 1} (1-8 integers, 0-99) or \\boxed{ready}."
        else:
            vals = re.findall(r"-?\d+", cmd)
            if not vals or re.search(r"[a-z]", cmd):
                msg = "In the test phase answer with the output list only, e.g. \\boxed{4 1 3}.\n" + self._test_prompt()
            else:
                guess, want = [int(v) for v in vals], self._rule(self.tests[self.idx])
                if guess == want:
                    self.idx += 1
                    msg = "Correct!"
                    if self.idx == len(self.tests):
                        msg += " Every test output predicted. You win!"
                        reward, terminated = 1.0, True
                    else:
                        msg += "\n" + self._test_prompt()
                else:
                    self.mistakes_left -= 1
                    same = sum(a == b for a, b in zip(guess, want))
                    msg = (f"Wrong: {same} position(s) match; the correct output has {len(want)} numbers "
                           f"(you gave {len(guess)}).")
                    if self.mistakes_left < 0:
                        msg += " Too many wrong predictions. You lose."
                        terminated = True
                    else:
                        msg += f" Wrong predictions still allowed: {self.mistakes_left}.\n" + self._test_prompt()
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of turns."
        self.done = terminated or truncated
        return msg, reward, terminated, truncated, self._info()

    def solution(self):
        answers = ["\\boxed{%s}" % " ".join(map(str, self._rule(t))) for t in self.tests]
        return ["\\boxed{query 1 2 3 4 5}", "\\boxed{query 9 0 7 7 2 6}", "\\boxed{ready}"] + answers
