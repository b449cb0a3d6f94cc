"""Answer a counterfactual question about one observed day of a structural causal model with known equations.

skill: Causal Inference
hint: Abduction, action, prediction: first recover each noise term from the observed values (noise = observed minus the equation's part), then set the intervened variable, keep the upstream values and the noise, and recompute everything downstream.
difficulty: 1-3
turns: single
"""
import random
import re

PROBE_VALUES = set(range(-1, 21)) | {42, 100}


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class CounterfactualEnv:
    ATTEMPTS = 2

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _model(self):
        """Random coefficients for the difficulty's template. Each equation: (var, text, f(values))."""
        r = self._rng
        a, b, c, d = r.randint(2, 4), r.randint(2, 4), r.choice([-3, -2, 2, 3]), r.randint(1, 3)
        cx = f"{'-' if c < 0 else '+'} {abs(c)}*X"
        if self.difficulty == 1:
            return [("X", "X = U_X", lambda v: 0),
                    ("Y", f"Y = {a}*X + U_Y", lambda v: a * v["X"]),
                    ("Z", f"Z = {b}*Y + U_Z", lambda v: b * v["Y"])]
        if self.difficulty == 2:
            return [("W", "W = U_W", lambda v: 0),
                    ("X", f"X = {d}*W + U_X", lambda v: d * v["W"]),
                    ("Y", f"Y = {a}*X + W + U_Y", lambda v: a * v["X"] + v["W"]),
                    ("Z", f"Z = {b}*Y {cx} + U_Z", lambda v: b * v["Y"] + c * v["X"])]
        return [("W", "W = U_W", lambda v: 0),
                ("X", "X = W + U_X", lambda v: v["W"]),
                ("Y", f"Y = {a}*X + U_Y", lambda v: a * v["X"]),
                ("M", f"M = max(Y, {d + 1}*W) + U_M", lambda v: max(v["Y"], (d + 1) * v["W"])),
                ("Z", f"Z = {b}*M {cx} + U_Z", lambda v: b * v["M"] + c * v["X"])]

    def _run(self, noise, do=None):
        values = {}
        for var, _, f in self.eqs:
            values[var] = do[1] if do and do[0] == var else f(values) + noise[var]
        return values

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        r = self._rng
        for _ in range(500):
            self.eqs = self._model()
            noise = {var: r.randint(-4, 9) for var, _, _ in self.eqs}
            self.observed = self._run(noise)
            self.new_x = self.observed["X"] + r.choice([-4, -3, -2, 2, 3, 4, 5])
            answer = self._run(noise, ("X", self.new_x))["Z"]
            # Shortcuts that must NOT give the answer: the factual Z, or recomputing with zero noise.
            naive = {self.observed["Z"], self._run({k: 0 for k in noise}, ("X", self.new_x))["Z"]}
            if self.difficulty == 3:  # the max() must switch branch, so linear extrapolation fails too
                lin = self._run(noise, ("X", self.observed["X"] + 1))["Z"] - self.observed["Z"]
                naive.add(self.observed["Z"] + lin * (self.new_x - self.observed["X"]))
            if answer not in PROBE_VALUES and answer not in naive:
                break
        self._answer = answer
        self.attempts_left = self.ATTEMPTS
        self._turns = 0
        self._done = False
        eq_text = "\n".join(f"  {text}" for _, text, _ in self.eqs)
        obs_text = ", ".join(f"{var}={self.observed[var]}" for var, _, _ in self.eqs)
        obs = (
            "A structural causal model with these equations (the U terms are unobserved noise, one per variable, "
            f"fixed for a given day):\n{eq_text}\nOn one day we observed: {obs_text}.\n\n"
            f"Counterfactual question: on that same day, what would Z have been had X been set to {self.new_x} "
            "(everything else following its equation)? Answer with an integer, e.g. \\boxed{57}. You have "
            f"{self.ATTEMPTS} attempts; a wrong one is told whether it is too high or too low."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "attempts_left": self.attempts_left}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        text = _content(action)
        reward, terminated = 0.0, False
        if not re.fullmatch(r"(?:z\s*=\s*)?[+-]?\d+", text.lower()):
            obs, reward = "Invalid answer. Reply with one integer, e.g. \\boxed{57}.", -0.05
        else:
            guess = int(re.search(r"[+-]?\d+", text).group())
            self.attempts_left -= 1
            if guess == self._answer:
                obs, reward, terminated = "Correct. You win!", 1.0, True
            else:
                obs = f"{guess} is too {'high' if guess > self._answer else 'low'}."
                if self.attempts_left == 0:
                    terminated = True
                    obs += f" No attempts left: the answer was {self._answer}. You lose."
                else:
                    obs += f" Attempts left: {self.attempts_left}."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        return [f"\\boxed{{{self._answer}}}"]
