"""Estimate a treatment's causal effect from confounded hospital records by adjusting for the confounder.

skill: Causal Inference
hint: The crude treated-vs-untreated comparison is confounded: sicker groups are treated more often. Compute the recovery-rate difference inside each group, then average those differences weighted by each group's share of ALL patients.
difficulty: 1-3
turns: single
"""
import random
import re
from fractions import Fraction

PROBE_VALUES = set(range(-2, 22)) | {41, 42, 43, 99, 100, 101}


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class BackdoorAdjustmentEnv:
    GROUPS = {1: ["mild", "severe"], 2: ["mild", "moderate", "severe"],
              3: ["young/mild", "old/mild", "young/severe", "old/severe"]}
    ATTEMPTS = 2

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _effects(self, rows):
        """(adjusted, crude) effect per 1000 patients, as exact fractions."""
        total = sum(nt + nc for nt, rt, nc, rc in rows)
        adjusted = sum(Fraction(nt + nc, total) * (Fraction(rt, nt) - Fraction(rc, nc)) for nt, rt, nc, rc in rows)
        crude = (Fraction(sum(r[1] for r in rows), sum(r[0] for r in rows))
                 - Fraction(sum(r[3] for r in rows), sum(r[2] for r in rows)))
        return adjusted * 1000, crude * 1000

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        r = self._rng
        groups = self.GROUPS[self.difficulty]
        for _ in range(1000):
            rows = []
            effect = r.choice([-1, 1]) * r.randint(4, 14) / 100  # true benefit (or harm) in recovery rate
            for g in range(len(groups)):
                sick = g / (len(groups) - 1)  # 0 = mildest group ... 1 = sickest group
                base = 0.85 - 0.5 * sick + r.uniform(-0.05, 0.05)
                share_treated = 0.2 + 0.6 * sick + r.uniform(-0.1, 0.1)  # sicker patients get treated more
                size = r.randint(10, 40) * 10
                nt = max(20, round(size * share_treated / 10) * 10)
                nc = max(20, size - nt)
                rt = round(nt * min(0.97, max(0.05, base + effect + r.uniform(-0.03, 0.03))))
                rc = round(nc * min(0.97, max(0.05, base + r.uniform(-0.03, 0.03))))
                rows.append((nt, rt, nc, rc))
            adjusted, crude = self._effects(rows)
            near_probe = any(abs(adjusted - p) <= 1 for p in PROBE_VALUES)
            # Keep Simpson-style cases: the crude comparison points the wrong way (or is far off).
            misleading = (crude * adjusted < 0) or (self.difficulty == 1 and abs(crude - adjusted) >= 40)
            if abs(adjusted) >= 25 and not near_probe and misleading:
                break
        self.rows, self.groups = rows, groups
        self._exact = adjusted
        self.attempts_left = self.ATTEMPTS
        self._turns = 0
        self._done = False
        lines = [f"  {g:>12}: treated {rt}/{nt} recovered, untreated {rc}/{nc} recovered"
                 for g, (nt, rt, nc, rc) in zip(groups, rows)]
        obs = (
            "Hospital records for a treatment, split by patient group (group membership affects both who gets "
            "treated and who recovers; it is the only common cause):\n" + "\n".join(lines)
            + "\n\nQuestion: what is the causal effect of the treatment, in extra recoveries per 1000 patients, "
            "if everyone in this population were treated versus if no one were? Negative if it harms. Answer with "
            f"an integer (within 1 of the exact value counts), e.g. \\boxed{{-63}}. You have {self.ATTEMPTS} "
            "attempts; a wrong one is told whether it is too high or too low."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "attempts_left": self.attempts_left}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        text = _content(action).replace(" ", "")
        reward, terminated = 0.0, False
        if not re.fullmatch(r"[+-]?\d+(\.\d+)?", text):
            obs, reward = "Invalid answer. Reply with one number of extra recoveries per 1000, e.g. \\boxed{-63}.", -0.05
        else:
            guess = Fraction(text)
            self.attempts_left -= 1
            if abs(guess - self._exact) <= 1:
                obs, reward, terminated = "Correct. You win!", 1.0, True
            else:
                obs = f"{text} is too {'high' if guess > self._exact else 'low'}."
                if self.attempts_left == 0:
                    terminated = True
                    obs += f" No attempts left: the adjusted effect was about {round(self._exact)}. You lose."
                else:
                    obs += f" Attempts left: {self.attempts_left}."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        return [f"\\boxed{{{round(self._exact)}}}"]
