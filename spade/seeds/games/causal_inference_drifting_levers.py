"""Run controlled experiments on a drifting plant to find which levers truly change its output, and by how much.

skill: Causal Inference
hint: The historical records are confounded, and the plant drifts by a fixed amount every run, so before/after comparisons are biased. Repeat the baseline to measure the drift, then change one lever at a time and subtract the drift.
difficulty: 1-3
turns: multi
"""
import random
import re

LEVERS = "ABCDE"


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class DriftingLeversEnv:
    SETTINGS = {1: (3, 1, 2), 2: (4, 2, 1), 3: (5, 2, 0)}  # difficulty -> (levers, causal levers, spare runs)
    DEFAULT = 2  # every lever sits at setting 2 unless a run changes it

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _output(self, settings, run_index):
        # Hidden structural equation: linear in the causal levers plus a per-run drift.
        y = self._base + self._drift * run_index
        return y + sum(self._effect[i] * (settings[i] - self.DEFAULT) for i in range(self.k))

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        rng = self._rng
        self.k, n_causal, spare = self.SETTINGS[self.difficulty]
        causal = sorted(rng.sample(range(self.k), n_causal))
        self._effect = [rng.choice([-4, -3, -2, 2, 3, 4, 5]) if i in causal else 0 for i in range(self.k)]
        self._base = rng.randint(40, 60)
        self._drift = rng.choice([-3, -2, 2, 3])
        # Records: a hidden "demand" level pushed operators to raise some levers and also raised output.
        demand_push = [rng.choice([0, 1, 1]) for _ in range(self.k)]
        records = []
        for _ in range(5):
            demand = rng.randint(0, 3)
            settings = [max(0, min(4, self.DEFAULT + demand_push[i] * (demand - 1) + rng.choice([-1, 0, 0, 1])))
                        for i in range(self.k)]
            y = self._base + 6 * demand + sum(self._effect[i] * (settings[i] - self.DEFAULT) for i in range(self.k))
            records.append((settings, y + rng.randint(-2, 2)))
        self.runs = 0
        self.max_runs = self.k + 2 + spare
        self._turns = 0
        self._done = False
        names = LEVERS[:self.k]
        rows = "\n".join("  " + ", ".join(f"{names[i]}={s[i]}" for i in range(self.k)) + f" -> output {y}"
                         for s, y in records)
        obs = (
            f"A plant has levers {', '.join(names)}, each set to an integer 0-4 (default {self.DEFAULT}). Its output "
            "is an exact linear function of some of the levers, each causal lever adding a fixed integer amount per "
            f"step of its setting; the other levers do nothing. Historical records (taken under varying demand):\n{rows}\n"
            "\nRun an experiment with \\boxed{run A=3 C=1}: listed levers are set as given, all others at the "
            f"default, and the output is measured. Runs happen one after another and conditions may drift between "
            f"runs. You may do {self.max_runs} runs. Then answer with every causal lever and its effect per step, "
            "e.g. \\boxed{answer B=+3 D=-2} (levers not named are taken as having no effect). One answer only; "
            f"it must be exactly right. You have {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "runs": self.runs, "runs_left": self.max_runs - self.runs}

    def _pairs(self, text):
        found = re.findall(r"([a-z])\s*=\s*([+-]?\d+)", text)
        if not found or re.sub(r"([a-z])\s*=\s*([+-]?\d+)|[,;\s]", "", text):
            return None  # something other than lever=value pairs
        return [(LEVERS.lower().find(a), int(v)) for a, v in found]

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        cmd = _content(action).lower()
        reward, terminated = 0.0, False
        head, _, rest = cmd.partition(" ")
        pairs = self._pairs(rest) if rest.strip() else ([] if head == "run" else None)
        if head not in ("run", "answer") or pairs is None or any(not 0 <= i < self.k for i, _ in pairs):
            obs = (f"Invalid action. Use \\boxed{{run A=3 B=0}} (levers {', '.join(LEVERS[:self.k])}, values 0-4; "
                   "\\boxed{run} alone keeps all defaults) or \\boxed{answer A=+2 C=-3}.")
            reward = -0.05
        elif head == "run":
            if self.runs >= self.max_runs:
                obs, reward = "No runs left: give your answer.", -0.05
            elif any(not 0 <= v <= 4 for _, v in pairs):
                obs, reward = "Lever settings must be integers from 0 to 4.", -0.05
            else:
                settings = [self.DEFAULT] * self.k
                for i, v in pairs:
                    settings[i] = v
                self.runs += 1
                y = self._output(settings, self.runs)
                desc = ", ".join(f"{LEVERS[i]}={settings[i]}" for i in range(self.k))
                obs = f"Run {self.runs} ({desc}): output {y}. Runs left: {self.max_runs - self.runs}."
        else:
            claimed = [0] * self.k
            for i, v in pairs:
                claimed[i] = v
            terminated = True
            if claimed == self._effect:
                reward, obs = 1.0, "Correct: those are exactly the causal effects. You win!"
            else:
                truth = " ".join(f"{LEVERS[i]}={e:+d}" for i, e in enumerate(self._effect) if e)
                obs = f"Wrong. The true effects were {truth} (all other levers 0). You lose."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        # Baseline twice (measures the drift), then one lever at a time moved to 3.
        moves = ["\\boxed{run}", "\\boxed{run}"]
        moves += [f"\\boxed{{run {LEVERS[i]}=3}}" for i in range(self.k)]
        answer = " ".join(f"{LEVERS[i]}={e:+d}" for i, e in enumerate(self._effect) if e)
        return moves + [f"\\boxed{{answer {answer}}}"]
