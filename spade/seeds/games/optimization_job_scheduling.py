"""Schedule jobs on one machine, respecting precedence, to minimise the total weighted completion time.

skill: Optimization
hint: Without constraints, run jobs in decreasing weight/duration order. A precedence rule can force a low-ratio job early: then compare the ratio of the whole group (job plus its prerequisite) against the others.
difficulty: 1-3
turns: multi
"""
import random
import re

LETTERS = "ABCDEFGH"


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class JobSchedulingEnv:
    SETTINGS = {1: (5, 1), 2: (6, 2), 3: (7, 3)}  # difficulty -> (jobs, precedence rules)
    ATTEMPTS = 2

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _cost(self, order):
        t = cost = 0
        for j in order:
            t += self.jobs[j][0]
            cost += self.jobs[j][1] * t
        return cost

    def _ready(self, j, done):
        return all(a in done for a, b in self.prec if b == j)

    def _optimum(self):
        """Exhaustive search over precedence-feasible orders (at most 7! = 5040)."""
        best = [None, None]

        def dfs(order):
            if len(order) == len(self.jobs):
                c = self._cost(order)
                if best[0] is None or c < best[0]:
                    best[0], best[1] = c, list(order)
                return
            for j in range(len(self.jobs)):
                if j not in order and self._ready(j, order):
                    order.append(j)
                    dfs(order)
                    order.pop()

        dfs([])
        return best[0], best[1]

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        n, k = self.SETTINGS[self.difficulty]
        for _ in range(200):
            self.jobs = [(self._rng.randint(1, 6), self._rng.randint(1, 6)) for _ in range(n)]
            topo = list(range(n))
            self._rng.shuffle(topo)
            pairs = [(topo[i], topo[j]) for i in range(n) for j in range(i + 1, n)]
            self.prec = sorted(self._rng.sample(pairs, k))
            smith = sorted(range(n), key=lambda j: (-self.jobs[j][1] / self.jobs[j][0], j))
            pos = {j: p for p, j in enumerate(smith)}
            # Keep instances where the plain ratio rule breaks at least one precedence rule.
            if any(pos[a] > pos[b] for a, b in self.prec):
                break
        self._best_cost, self._best_order = self._optimum()
        self.order = []
        self.attempt = 1
        self._turns = 0
        self._done = False
        rows = [f"  {LETTERS[j]}: duration {p}, weight {w}" for j, (p, w) in enumerate(self.jobs)]
        rules = [f"  {LETTERS[a]} must finish before {LETTERS[b]} starts" for a, b in self.prec]
        obs = (
            "Single-machine scheduling. Jobs run one at a time, back to back, starting at time 0:\n"
            + "\n".join(rows) + "\nPrecedence rules:\n" + "\n".join(rules)
            + "\n\nCost of a schedule = sum over jobs of weight x completion time. Each turn, name the next job "
            "to run, e.g. \\boxed{C} or \\boxed{run C}. A job whose prerequisite has not run yet is refused. "
            "When every job is placed the schedule is scored: you win if its cost equals the minimum possible "
            f"cost. You have {self.ATTEMPTS} attempts (a failed schedule is cleared and you start again) "
            f"and {self.max_turns} turns in total."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "attempt": self.attempt, "scheduled": "".join(LETTERS[j] for j in self.order)}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        cmd = _content(action).upper()
        m = re.fullmatch(r"(?:RUN\s+)?([A-Z])", cmd)
        j = LETTERS.find(m.group(1)) if m else -1
        reward, terminated = 0.0, False
        if not 0 <= j < len(self.jobs):
            obs = f"Invalid action. Name a job letter A-{LETTERS[len(self.jobs) - 1]}, e.g. \\boxed{{run B}}."
            reward = -0.05
        elif j in self.order:
            obs, reward = f"Job {LETTERS[j]} is already scheduled.", -0.05
        elif not self._ready(j, self.order):
            need = [LETTERS[a] for a, b in self.prec if b == j and a not in self.order]
            obs, reward = f"Refused: {LETTERS[j]} needs {', '.join(need)} to finish first.", -0.05
        else:
            self.order.append(j)
            end = sum(self.jobs[x][0] for x in self.order)
            obs = (f"{LETTERS[j]} runs until time {end} (adds {self.jobs[j][1] * end} to the cost). "
                   f"Cost so far {self._cost(self.order)}.")
            if len(self.order) == len(self.jobs):
                cost = self._cost(self.order)
                if cost == self._best_cost:
                    reward, terminated = 1.0, True
                    obs += f" Schedule complete with cost {cost}: optimal. You win!"
                elif self.attempt < self.ATTEMPTS:
                    self.attempt += 1
                    self.order = []
                    obs += (f" Schedule complete with cost {cost}, but the minimum is {self._best_cost}. "
                            f"The machine is cleared: attempt {self.attempt} of {self.ATTEMPTS}.")
                else:
                    terminated = True
                    obs += f" Schedule complete with cost {cost}, but the minimum is {self._best_cost}. You lose."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        return [f"\\boxed{{run {LETTERS[j]}}}" for j in self._best_order]
