"""Discover the hidden causal wiring between signals by intervening on them, holding others fixed when needed.

skill: Causal Inference
hint: Wiggling X shows all its descendants, not only its direct effects. If X reaches Z and also reaches a Y that reaches Z, test X again holding the in-between signals fixed: Z still moving means a direct X->Z link.
difficulty: 1-3
turns: multi
"""
import random
import re

NAMES = "PQRSTU"


def _content(action):
    text = "" if action is None else str(action)
    m = re.search(r"\\boxed\{(.*)\}", text, re.S)
    return (m.group(1) if m else text).strip()


class CausalWiringEnv:
    SETTINGS = {1: (4, 1, 3), 2: (5, 2, 2), 3: (6, 2, 1)}  # difficulty -> (signals, min ambiguous pairs, spare)

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.reset()

    def _reach(self, x, held=()):
        """Signals that change when x is wiggled and the signals in `held` are clamped."""
        seen, frontier = [], [x]
        while frontier:
            cur = frontier.pop()
            for a, b in self.edges:
                if a == cur and b not in seen and b not in held and b != x:
                    seen.append(b)
                    frontier.append(b)
        return sorted(seen)

    def _ambiguous(self):
        """Pairs (x, z) where z is reached from x through some intermediate y as well; an intervention
        on x alone cannot tell whether x also acts on z directly. Returns (x, z, intermediates)."""
        out = []
        for x in range(self.n):
            dx = self._reach(x)
            for z in dx:
                mids = [y for y in dx if y != z and z in self._reach(y)]
                if mids:
                    out.append((x, z, mids))
        return out

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self.n, min_amb, spare = self.SETTINGS[self.difficulty]
        for _ in range(500):
            order = list(range(self.n))
            self._rng.shuffle(order)
            self.edges = sorted((order[i], order[j]) for i in range(self.n) for j in range(i + 1, self.n)
                                if self._rng.random() < 0.4)
            amb = self._ambiguous()
            budget = self.n + len(amb) + spare
            if len(amb) >= min_amb and budget <= 20 and any(
                    (x, z) not in self.edges for x, z, _ in amb):
                break
        self._amb = amb
        self.budget = budget
        self.used = 0
        self._turns = 0
        self._done = False
        names = ", ".join(NAMES[:self.n])
        obs = (
            f"Hidden wiring: signals {names} are connected by one-way causal links (no cycles). Wiggling a signal "
            "makes every signal downstream of it change, through any chain of links.\n"
            f"Experiment with \\boxed{{do {NAMES[0]}}} to wiggle {NAMES[0]} and see which signals change, or "
            f"\\boxed{{do {NAMES[0]} hold {NAMES[1]} {NAMES[2]}}} to wiggle {NAMES[0]} while clamping {NAMES[1]} and "
            f"{NAMES[2]} (clamped signals never change, so effects cannot pass through them). You have "
            f"{self.budget} experiments.\nThen give every direct link, e.g. \\boxed{{answer {NAMES[0]}>{NAMES[1]}, "
            f"{NAMES[1]}>{NAMES[2]}}} (\\boxed{{answer none}} if there are no links). One answer only: it must match the "
            f"wiring exactly. You have {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"turn": self._turns, "experiments_left": self.budget - self.used}

    def _ids(self, text):
        letters = re.findall(r"[a-z]", text)
        if re.sub(r"[a-z,\s]", "", text) or any(NAMES.lower().find(c) < 0 or NAMES.lower().find(c) >= self.n
                                                for c in letters):
            return None
        return [NAMES.lower().index(c) for c in letters]

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turns += 1
        cmd = _content(action).lower()
        do = re.fullmatch(r"do\s+([a-z])(?:\s+hold\s+(.+))?", cmd)
        ans = re.fullmatch(r"answer\s*:?\s*(.*)", cmd, re.S)
        reward, terminated = 0.0, False
        x = self._ids(do.group(1)) if do else None
        held = self._ids(do.group(2) or "") if do else None
        if do and x and held is not None and x[0] not in held:
            if self.used >= self.budget:
                obs, reward = "No experiments left: give your answer.", -0.05
            else:
                self.used += 1
                changed = self._reach(x[0], held)
                still = [NAMES[i] for i in range(self.n) if i != x[0] and i not in changed and i not in held]
                clamp = f" holding {', '.join(NAMES[i] for i in sorted(set(held)))}" if held else ""
                obs = (f"Wiggled {NAMES[x[0]]}{clamp}: changed: {', '.join(NAMES[i] for i in changed) or 'none'}; "
                       f"unchanged: {', '.join(still) or 'none'}. Experiments left: {self.budget - self.used}.")
        elif ans:
            body = ans.group(1).strip()
            pairs = re.findall(r"([a-z])\s*-?>\s*([a-z])", body)
            rest = re.sub(r"([a-z])\s*-?>\s*([a-z])|[,;\s]", "", body)
            if rest and body != "none":
                obs, reward = f"Could not read the links. Write them like \\boxed{{answer {NAMES[0]}>{NAMES[1]}}}.", -0.05
            else:
                claimed = sorted({(NAMES.lower().find(a), NAMES.lower().find(b)) for a, b in pairs})
                terminated = True
                if claimed == self.edges:
                    reward, obs = 1.0, "Correct: that is exactly the hidden wiring. You win!"
                else:
                    truth = ", ".join(f"{NAMES[a]}>{NAMES[b]}" for a, b in self.edges) or "none"
                    obs = f"Wrong. The wiring was: {truth}. You lose."
        else:
            obs = (f"Invalid action. Use \\boxed{{do X}}, \\boxed{{do X hold Y Z}} (signals {', '.join(NAMES[:self.n])}, "
                   "X not held) or \\boxed{answer X>Y, Y>Z}.")
            reward = -0.05
        truncated = False
        if not terminated and self._turns >= self.max_turns:
            truncated, reward = True, 0.0
            obs += " Turn budget exhausted."
        self._done = terminated or truncated
        return obs, reward, terminated, truncated, self._info()

    def solution(self):
        moves = [f"\\boxed{{do {NAMES[x]}}}" for x in range(self.n)]
        # For each ambiguous pair, clamp the intermediates: z still changes iff the link x->z is direct.
        moves += [f"\\boxed{{do {NAMES[x]} hold {' '.join(NAMES[y] for y in mids)}}}" for x, _, mids in self._amb]
        links = ", ".join(f"{NAMES[a]}>{NAMES[b]}" for a, b in self.edges) or "none"
        return moves + [f"\\boxed{{answer {links}}}"]
