"""Find the counterfeit coin with a balance scale and a fixed number of weighings.

skill: Logical Deduction
hint: A weighing has three outcomes, so split the suspects into three nearly equal groups, putting known-genuine coins on the scale to even out the pans. Track for each coin whether it could still be heavy, light, or is proven genuine.
difficulty: 1-3
turns: multi
"""
import random
import re
from functools import lru_cache

# (coins, weighings, whether the fake may be lighter instead of heavier)
_LEVELS = {1: (9, 3, False), 2: (27, 3, False), 3: (12, 3, True)}


@lru_cache(maxsize=None)
def _plan(h, l, u, g, w):
    """Counts (hl, ll, ul, gl, hr, lr, ur, gr) for a weighing that still guarantees success, or None.

    h/l: coins that can only be heavy/light, u: coins that may be either, g: proven genuine.
    Returns () when the fake (and its direction) is already known.
    """
    if h + l + 2 * u <= 1:
        return ()
    if w == 0:
        return None
    cap = 3 ** (w - 1)
    total = h + l + u + g
    options = []
    for hl in range(h + 1):
        for hr in range(h - hl + 1):
            for ll in range(l + 1):
                for lr in range(l - ll + 1):
                    for ul in range(u + 1):
                        for ur in range(u - ul + 1):
                            diff = (hr + lr + ur) - (hl + ll + ul)  # genuine coins fill the lighter-count pan
                            gl, gr = max(diff, 0), max(-diff, 0)
                            if gl + gr > g or hl + ll + ul + gl == 0:
                                continue
                            rest = (h - hl - hr, l - ll - lr, u - ul - ur)
                            outcomes = [(hl + ul, lr + ur, 0), (hr + ur, ll + ul, 0), rest]
                            worst = max(a + b + 2 * c for a, b, c in outcomes)
                            if worst <= cap:
                                options.append((worst, (hl, ll, ul, gl, hr, lr, ur, gr), outcomes))
    # prefer the most balanced split; deeper feasibility is checked lazily and memoised
    for _, counts, outcomes in sorted(options):
        if all(_plan(a, b, c, total - a - b - c, w - 1) is not None for a, b, c in outcomes):
            return counts
    return None


class CoinWeighingEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.n, self.budget, self.either = _LEVELS[self.difficulty]
        self._fake = self._rng.randint(1, self.n)
        self._sign = self._rng.choice([1, -1]) if self.either else 1  # +1 heavy, -1 light
        self.used = 0
        self.turn = 0
        self.done = False
        kind = "either heavier or lighter than the others (you must say which)" if self.either else "heavier than the others"
        fmt = "\\boxed{answer 7 heavy} or \\boxed{answer 7 light}" if self.either else "\\boxed{answer 7}"
        obs = (
            f"You have {self.n} coins numbered 1 to {self.n}. All weigh the same except exactly one counterfeit, "
            f"which is {kind}.\nYou have a balance scale and may use it at most {self.budget} times.\n"
            "To weigh, put disjoint groups of equal size on the two pans: \\boxed{weigh 1 2 3 vs 4 5 6}. "
            "The scale tells you whether the left pan is heavier, the right pan is heavier, or they balance.\n"
            f"When you are sure, name the counterfeit: {fmt}. You get one answer; a wrong answer loses. "
            f"You have {self.max_turns} turns in total."
        )
        return obs, {"weighings_left": self.budget}

    def _weigh(self, left, right):
        delta = (self._fake in left) - (self._fake in right)
        return delta * self._sign  # >0: left pan heavier

    def solution(self):
        h = list(range(1, self.n + 1)) if not self.either else []
        u = list(range(1, self.n + 1)) if self.either else []
        l, g, out = [], [], []
        for w in range(self.budget, 0, -1):
            plan = _plan(len(h), len(l), len(u), len(g), w)
            if not plan:
                break
            hl, ll, ul, gl, hr, lr, ur, gr = plan
            left = h[:hl] + l[:ll] + u[:ul] + g[:gl]
            right = h[hl:hl + hr] + l[ll:ll + lr] + u[ul:ul + ur] + g[gl:gl + gr]
            out.append(f"\\boxed{{weigh {' '.join(map(str, left))} vs {' '.join(map(str, right))}}}")
            res = self._weigh(left, right)
            on = set(left) | set(right)
            if res > 0:
                nh = [c for c in h + u if c in left]
                nl = [c for c in l + u if c in right]
            elif res < 0:
                nh = [c for c in h + u if c in right]
                nl = [c for c in l + u if c in left]
            else:
                nh, nl = [c for c in h if c not in on], [c for c in l if c not in on]
            nu = [c for c in u if c not in on] if res == 0 else []
            g = sorted(set(range(1, self.n + 1)) - set(nh) - set(nl) - set(nu))
            h, l, u = nh, nl, nu
        coin, word = (h[0], " heavy") if h else (l[0], " light")
        return out + [f"\\boxed{{answer {coin}{word if self.either else ''}}}"]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        reward, term, obs = 0.0, False, ""
        wm = re.fullmatch(r"weigh\s+([\d\s,]+?)\s*(?:vs\.?|versus|\|)\s*([\d\s,]+)", text)
        am = re.fullmatch(r"answer\s+(\d+)\s*(heavy|heavier|light|lighter)?", text)
        if wm:
            left = [int(x) for x in re.findall(r"\d+", wm.group(1))]
            right = [int(x) for x in re.findall(r"\d+", wm.group(2))]
            coins = left + right
            if self.used >= self.budget:
                obs = "You have no weighings left; give your answer."
            elif len(left) != len(right) or not left:
                obs = f"Both pans need the same non-zero number of coins (you gave {len(left)} vs {len(right)})."
            elif len(set(coins)) != len(coins) or not all(1 <= c <= self.n for c in coins):
                obs = f"Each coin 1..{self.n} may appear at most once in a weighing."
            else:
                self.used += 1
                res = self._weigh(left, right)
                verdict = "the LEFT pan is heavier" if res > 0 else "the RIGHT pan is heavier" if res < 0 else "the pans BALANCE"
                obs = f"Weighing {self.used}/{self.budget}: {verdict}."
        elif am:
            coin, word = int(am.group(1)), am.group(2)
            if self.either and not word:
                obs = "Say whether the coin is heavy or light, e.g. \\boxed{answer 7 light}."
            else:
                sign = -1 if word and word.startswith("light") else 1
                term, self.done = True, True
                if coin == self._fake and (sign == self._sign or not self.either):
                    return "Correct, that is the counterfeit. You win!", 1.0, True, False, {"weighings_left": self.budget - self.used}
                obs, reward = ("Wrong: that is not the counterfeit"
                               + (" with that weight." if self.either else ".") + " You lose."), 0.0
        else:
            obs, reward = "Unrecognised action. Use \\boxed{weigh 1 2 vs 3 4} or \\boxed{answer 5}.", -0.05
        truncated = not term and self.turn >= self.max_turns
        self.done = self.done or truncated
        return obs, reward, term, truncated, {"weighings_left": self.budget - self.used}
