"""Experiment on a panel of switches to find which ones really control a lamp, despite a misleading log.

skill: Causal Inference
hint: Correlation in the log is not causation: one switch was habitually flipped along with the lamp. Take a logged setting, flip exactly one switch per test and see whether the lamp changes; pick a base setting where single flips can matter.
difficulty: 1-3
turns: multi
"""
import random
import re


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class SwitchPanelEnv:
    SETTINGS = {1: (4, 2, 3), 2: (5, 2, 2), 3: (6, 3, 1)}  # difficulty -> (switches, causes, spare tests)

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _lamp(self, cfg):
        # Hidden mechanism: AND (or OR) of literals over the causal switches; some literals negated.
        lits = [cfg[i] != neg for i, neg in zip(self._causes, self._negated)]
        return all(lits) if self._kind == "and" else any(lits)

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.n, n_causes, spare = self.SETTINGS[self.difficulty]
        rng = self._rng
        self._causes = sorted(rng.sample(range(self.n), n_causes))
        self._negated = [rng.random() < 0.4 for _ in self._causes]
        self._kind = rng.choice(["and", "or"])
        decoy = rng.choice([i for i in range(self.n) if i not in self._causes])
        # Observational log: the operator tended to set the decoy switch to match the lamp.
        while True:
            log = []
            for _ in range(6):
                cfg = [rng.random() < 0.5 for _ in range(self.n)]
                cfg[decoy] = self._lamp(cfg) if rng.random() < 0.9 else not self._lamp(cfg)
                log.append(cfg)
            if len({self._lamp(c) for c in log}) == 2:  # the log shows the lamp both on and off
                break
        self.log = log
        self.tests_left = self.n + spare
        self._turns = 0
        self._done = False
        bits = lambda c: "".join("1" if b else "0" for b in c)
        rows = "\n".join(f"  {bits(c)} -> lamp {'ON' if self._lamp(c) else 'off'}" for c in log)
        obs = (
            f"A panel has {self.n} switches, numbered 1-{self.n} from left to right, and one lamp. A setting is "
            f"written as {self.n} digits (1 = up, 0 = down). The lamp depends only on some of the switches. "
            f"Operator's log of past settings:\n{rows}\n\n"
            f"Run a test with \\boxed{{test {bits([i % 2 == 0 for i in range(self.n)])}}} to see the lamp for that "
            f"setting. You have {self.tests_left} tests. When ready, name every switch that affects the lamp, "
            "e.g. \\boxed{answer 2 5}. One answer only: it must list exactly the switches that matter. "
            f"You have {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "tests_left": self.tests_left}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        cmd = _content(action).lower()
        test = re.fullmatch(r"test\s+([01]+)", cmd)
        ans = re.fullmatch(r"answer\s*:?\s*([\d,\s]*)", cmd)
        reward, terminated = 0.0, False
        if test and len(test.group(1)) == self.n:
            if self.tests_left == 0:
                obs, reward = "No tests left: give your answer, e.g. \\boxed{answer 1 3}.", -0.05
            else:
                self.tests_left -= 1
                cfg = [ch == "1" for ch in test.group(1)]
                obs = f"Setting {test.group(1)}: lamp {'ON' if self._lamp(cfg) else 'off'}. Tests left: {self.tests_left}."
        elif ans:
            picked = sorted({int(x) for x in re.findall(r"\d+", ans.group(1))})
            terminated = True
            if picked == [i + 1 for i in self._causes]:
                reward, obs = 1.0, "Correct: exactly those switches control the lamp. You win!"
            else:
                truth = " ".join(str(i + 1) for i in self._causes)
                obs = f"Wrong. The lamp is controlled by switches {truth}. You lose."
        else:
            obs = (f"Invalid action. Use \\boxed{{test <{self.n} digits of 0/1>}} or \\boxed{{answer <switch "
                   "numbers>}}.")
            reward = -0.05
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        # From a logged setting where every cause is pivotal (lamp ON for AND, off for OR),
        # flip each switch once; the lamp changes exactly for the causes.
        want_on = self._kind == "and"
        base = next(c for c in self.log if self._lamp(c) == want_on)
        moves = []
        for i in range(self.n):
            cfg = list(base)
            cfg[i] = not cfg[i]
            moves.append("\\boxed{test " + "".join("1" if b else "0" for b in cfg) + "}")
        return moves + ["\\boxed{answer " + " ".join(str(i + 1) for i in self._causes) + "}"]
