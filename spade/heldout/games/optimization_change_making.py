"""Pay an exact amount with as few coins as possible in a currency where greedy change fails.

skill: Optimization
hint: Taking the largest coin first is not always best here. Build up the fewest coins for every amount from 1 to the target (best[a] = 1 + min over coins c of best[a - c]), respecting any limit on how many of each coin you own.
difficulty: 1-3
turns: single
"""
import random
import re

# (number of coin types, largest coin, target range, copies owned of each coin or None for unlimited)
_LEVELS = {1: (3, 12, (21, 45), None), 2: (4, 25, (40, 99), None), 3: (5, 40, (80, 199), 3)}
_ATTEMPTS = 3


def _fewest(coins, target, limit):
    """Bounded change-making DP: fewest coins summing to target, returning the multiset (or None)."""
    best = {0: []}
    for c in coins:
        copies = limit if limit else target // c
        for _ in range(copies):  # each copy is a 0/1 item, so limits are respected
            for a in sorted(best, reverse=True):
                b = a + c
                if b <= target and (b not in best or len(best[a]) + 1 < len(best[b])):
                    best[b] = best[a] + [c]
    return best.get(target)


def _greedy(coins, target, limit):
    used, rest = [], target
    for c in sorted(coins, reverse=True):
        take = min(rest // c, limit or rest)
        used += [c] * take
        rest -= c * take
    return used if rest == 0 else None


class ChangeMakingEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        k, top, (lo, hi), self.limit = _LEVELS[self.difficulty]
        while True:
            self.coins = sorted([1] + self._rng.sample(range(3, top + 1), k - 1))
            self.target = self._rng.randint(lo, hi)
            if self.target in (42, 100) or self.target in self.coins:
                continue
            best = _fewest(self.coins, self.target, self.limit)
            greedy = _greedy(self.coins, self.target, self.limit)
            # only keep instances where the greedy payment is missing or strictly worse
            if best and (greedy is None or len(greedy) > len(best)):
                break
        self._best = sorted(best, reverse=True)
        self.attempts = _ATTEMPTS
        self.turn = 0
        self.done = False
        owned = f"You own only {self.limit} of each coin." if self.limit else "You have as many of each coin as you like."
        obs = (
            f"The coins of Numeria are worth {', '.join(map(str, self.coins))}. {owned}\n"
            f"Pay exactly {self.target} using the FEWEST coins possible.\n"
            "Reply with the coins you hand over, either listed or as counts: \\boxed{9 9 5 1} or "
            "\\boxed{2x9 + 1x5 + 1x1}.\n"
            f"You have {_ATTEMPTS} attempts; a wrong payment is checked and explained. You win with an exact "
            "payment that uses the minimum number of coins."
        )
        return obs, {"attempts_left": self.attempts}

    def solution(self):
        counts = {c: self._best.count(c) for c in self._best}
        return ["\\boxed{" + " + ".join(f"{n}x{c}" for c, n in counts.items()) + "}"]

    def _parse(self, text):
        """'9 9 5 1' or '2x9 + 1x5 + 1x1' -> [9, 9, 5, 1]; None when unreadable."""
        text = re.sub(r"(\d+)\s*[x*×]\s*(\d+)", r"\1x\2", text)
        paid = []
        for part in re.split(r"[+,;\s]+", text):
            if not part:
                continue
            mm = re.fullmatch(r"(\d+)x(\d+)|(\d+)", part)
            if not mm or (mm.group(1) and int(mm.group(1)) > 500):
                return None
            paid += [int(mm.group(2))] * int(mm.group(1)) if mm.group(1) else [int(mm.group(3))]
        return paid

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        text = (m.group(1) if m else (action or "")).strip().lower()
        paid = self._parse(text)
        term, reward = False, 0.0
        if not paid or len(paid) > 500:
            obs, reward = "Unrecognised payment. List coin values, e.g. \\boxed{9 9 5 1} or \\boxed{2x9 + 1x5 + 1x1}.", -0.05
        else:
            self.attempts -= 1
            bad = sorted({c for c in paid if c not in self.coins})
            over = sorted({c for c in paid if self.limit and paid.count(c) > self.limit})
            if bad:
                obs = f"There is no coin worth {', '.join(map(str, bad))}."
            elif over:
                obs = f"You own only {self.limit} coins of value {', '.join(map(str, over))}."
            elif sum(paid) != self.target:
                obs = f"Those coins add up to {sum(paid)}, not {self.target}."
            elif len(paid) > len(self._best):
                obs = f"That pays {self.target} exactly with {len(paid)} coins, but fewer coins are possible."
            else:
                self.done = True
                return f"Exact payment with {len(paid)} coins, the minimum. You win!", 1.0, True, False, {"attempts_left": self.attempts}
            term = self.attempts <= 0
            obs += " No attempts left. You lose." if term else f" Attempts left: {self.attempts}."
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"attempts_left": self.attempts}
