"""Find the one broken internal service behind a cascade of failures by testing services in a dependency graph.

skill: Causal Inference
hint: A failure propagates to everything that depends on it, never upstream. List the services that could explain exactly the observed alerts, then test a service that splits those candidates roughly in half; a healthy service clears all its dependencies.
difficulty: 1-3
turns: multi
"""
import random
import re

TIER0 = ["dns", "db", "cache", "queue", "storage", "config"]
TIER1 = ["auth", "users", "catalog", "inventory", "pricing", "billing", "search", "mailer"]
TIER2 = ["web", "mobile", "checkout", "admin", "reports"]


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class RootCauseEnv:
    SETTINGS = {1: (3, 3, 3, 2, 3), 2: (4, 5, 3, 1, 4), 3: (5, 7, 4, 0, 5)}  # tier sizes, spare tests, min suspects

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _failing(self, root):
        """Root plus every service that depends on it, directly or transitively."""
        bad = {root}
        for s in self.order:  # topological order: dependencies come first
            if any(d in bad for d in self.deps[s]):
                bad.add(s)
        return bad

    def _consistent(self, facts):
        return [r for r in self.internal if all((s in self._failing(r)) == f for s, f in facts.items())]

    def _greedy_tests(self, facts):
        """Minimax test choice, simulated against the true root (privileged)."""
        facts, tests = dict(facts), []
        while len(self._consistent(facts)) > 1:
            cands = self._consistent(facts)

            def worst(s):
                hits = sum(1 for r in cands if s in self._failing(r))
                return (max(hits, len(cands) - hits), s)
            pick = min((s for s in self.order if s not in facts), key=worst)
            facts[pick] = pick in self._failing(self._root)
            tests.append(pick)
        return tests

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        rng = self._rng
        n0, n1, n2, spare, min_suspects = self.SETTINGS[self.difficulty]
        for _ in range(300):
            t0, t1, t2 = rng.sample(TIER0, n0), rng.sample(TIER1, n1), rng.sample(TIER2, n2)
            self.deps = {s: [] for s in t0}
            for i, s in enumerate(t1):
                pool = t0 + t1[:i]
                self.deps[s] = sorted(rng.sample(pool, rng.randint(1, min(2, len(pool)))))
            for s in t2:
                self.deps[s] = sorted(rng.sample(t0 + t1, rng.randint(2, 3)))
            self.order, self.internal, self.monitored = t0 + t1 + t2, sorted(t0 + t1), sorted(t2)
            self._root = rng.choice(self.internal)
            bad = self._failing(self._root)
            self.alerts = {s: s in bad for s in self.monitored}
            if any(self.alerts.values()) and len(self._consistent(self.alerts)) >= min_suspects:
                break
        self._plan = self._greedy_tests(self.alerts)
        self.tests_left = len(self._plan) + spare
        self._turns = 0
        self._done = False
        dep_lines = "\n".join(f"  {s} -> {', '.join(self.deps[s]) or '(nothing)'}" for s in sorted(self.order))
        alert_line = ", ".join(f"{s}: {'FAILING' if self.alerts[s] else 'healthy'}" for s in self.monitored)
        obs = (
            "Incident! Exactly one internal service is broken. A service fails if it is broken or if any service "
            f"it depends on fails. Dependencies (service -> what it needs):\n{dep_lines}\n"
            f"User-facing monitors: {alert_line}.\nThe broken service is one of: {', '.join(self.internal)}.\n\n"
            f"Check one service per turn with \\boxed{{test {self.internal[0]}}} (reports FAILING or healthy). You have "
            f"{self.tests_left} tests. Then name the broken service with \\boxed{{answer <service>}}; one answer only. "
            f"You have {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "tests_left": self.tests_left}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        m = re.fullmatch(r"(test|answer)\s*:?\s+([a-z\-]+)", _content(action).lower())
        reward, terminated = 0.0, False
        if not m or m.group(2) not in self.deps:
            obs = ("Invalid action. Use \\boxed{test <service>} or \\boxed{answer <service>} with a service name "
                   "from the dependency list.")
            reward = -0.05
        elif m.group(1) == "test":
            if self.tests_left == 0:
                obs, reward = "No tests left: give your answer.", -0.05
            else:
                self.tests_left -= 1
                state = "FAILING" if m.group(2) in self._failing(self._root) else "healthy"
                obs = f"{m.group(2)} is {state}. Tests left: {self.tests_left}."
        else:
            terminated = True
            if m.group(2) == self._root:
                reward, obs = 1.0, f"Correct: {self._root} was the root cause. You win!"
            else:
                obs = f"Wrong: the broken service was {self._root}. You lose."
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        return [f"\\boxed{{test {s}}}" for s in self._plan] + [f"\\boxed{{answer {self._root}}}"]
