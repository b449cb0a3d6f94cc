"""Trade a commodity over a known price forecast, with a storage cap and a fee per trade, to end with the most cash.

skill: Optimization
hint: Each trade pays a fixed fee, so only price rises bigger than the fees are worth trading. Plan backwards from the last day: for each day and stock level, the best cash you can still reach. Unsold stock is worthless at the end.
difficulty: 1-3
turns: multi
"""
import random
import re


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class ForecastTradingEnv:
    SETTINGS = {1: (6, 4, 1), 2: (8, 4, 2), 3: (10, 5, 3)}  # difficulty -> (days, storage cap, fee)
    START_CASH = 30

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _plan(self, prices):
        """DP over days: best[h] = (max cash holding h units, plan). More cash with the same stock
        dominates, so keeping only the maximum per stock level is exact."""
        best = {0: (self.START_CASH, [])}
        for p in prices:
            nxt = {}
            for h, (cash, plan) in sorted(best.items()):
                options = [(h, cash, "wait")]
                options += [(h + n, cash - n * p - self.fee, f"buy {n}") for n in range(1, self.cap - h + 1)
                            if n * p + self.fee <= cash]
                options += [(h - n, cash + n * p - self.fee, f"sell {n}") for n in range(1, h + 1)]
                for h2, c2, act in options:
                    if h2 not in nxt or c2 > nxt[h2][0]:
                        nxt[h2] = (c2, plan + [act])
            best = nxt
        return max(best.values(), key=lambda cp: cp[0])

    def _single_round_trip(self, prices):
        """Best cash from one buy and one later sell (what a naive trader does)."""
        best = self.START_CASH
        for i in range(len(prices)):
            n = min(self.cap, (self.START_CASH - self.fee) // prices[i])
            for j in range(i + 1, len(prices)):
                best = max(best, self.START_CASH + n * (prices[j] - prices[i]) - 2 * self.fee)
        return best

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        days, self.cap, self.fee = self.SETTINGS[self.difficulty]
        for _ in range(300):
            p, prices = self._rng.randint(6, 14), []
            for _ in range(days):
                p = max(3, min(20, p + self._rng.choice([-5, -4, -3, -2, 2, 3, 4, 5])))
                prices.append(p)
            final, plan = self._plan(prices)
            # Require a profit that needs more than one buy/sell round trip (except at difficulty 1).
            if final > self.START_CASH + 5 and (self.difficulty == 1 or self._single_round_trip(prices) < final):
                break
        self.prices, self._best_cash, self._best_plan = prices, final, plan
        self.day, self.cash, self.stock = 0, self.START_CASH, 0
        self._turns = 0
        self._done = False
        table = ", ".join(f"day {d + 1}: {q}" for d, q in enumerate(prices))
        obs = (
            f"Commodity trading over {days} days. The price forecast is exact:\n  {table}\n"
            f"You start with {self.START_CASH} cash and 0 units. Storage holds at most {self.cap} units. "
            f"Every buy or sell costs a fee of {self.fee} (per trade, whatever the quantity); you cannot spend "
            "more cash than you have. Each turn is one day: \\boxed{buy 2}, \\boxed{sell 3} or \\boxed{wait}. "
            "Units left at the end are worth nothing. You win if your cash after the last day equals the maximum "
            f"achievable. You have {self.max_turns} turns (invalid actions use a turn but not a day).\n"
            + self._status()
        )
        return obs, self._info()

    def _status(self):
        if self.day >= len(self.prices):
            return f"Trading over. Cash {self.cash}, stock {self.stock}."
        return f"Day {self.day + 1}: price {self.prices[self.day]}. Cash {self.cash}, stock {self.stock}."

    def _info(self):
        return {"turn": self._turns, "day": self.day + 1, "cash": self.cash, "stock": self.stock}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        cmd = _content(action).lower()
        m = re.fullmatch(r"(buy|sell)\s+(\d+)", cmd)
        price = self.prices[self.day]
        reward, terminated, error = 0.0, False, None
        if cmd in ("wait", "hold"):
            msg = f"Day {self.day + 1}: you wait."
        elif m and int(m.group(2)) > 0:
            n = int(m.group(2))
            if m.group(1) == "buy":
                if self.stock + n > self.cap:
                    error = f"Storage cap is {self.cap}; you hold {self.stock}."
                elif n * price + self.fee > self.cash:
                    error = f"Buying {n} costs {n * price} + fee {self.fee}, but you have {self.cash}."
                else:
                    self.stock += n
                    self.cash -= n * price + self.fee
                    msg = f"Day {self.day + 1}: bought {n} at {price} (fee {self.fee})."
            elif n > self.stock:
                error = f"You only hold {self.stock} units."
            else:
                self.stock -= n
                self.cash += n * price - self.fee
                msg = f"Day {self.day + 1}: sold {n} at {price} (fee {self.fee})."
        else:
            error = "Invalid action. Use \\boxed{buy N}, \\boxed{sell N} (N a positive integer) or \\boxed{wait}."
        if error:
            obs, reward = f"{error} The day does not advance. {self._status()}", -0.05
        else:
            self.day += 1
            obs = f"{msg} {self._status()}"
            if self.day == len(self.prices):
                terminated = True
                if self.cash == self._best_cash:
                    reward = 1.0
                    obs += " That is the maximum possible. You win!"
                else:
                    obs += f" The maximum possible was {self._best_cash}. You lose."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        return [f"\\boxed{{{act}}}" for act in self._best_plan]
