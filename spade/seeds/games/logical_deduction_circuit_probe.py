"""Identify a hidden two-level logic circuit by probing its inputs, then write it down.

skill: Logical Deduction
hint: Keep the set of circuits consistent with every probe. Probe inputs that split that set, such as inputs differing in one bit from an earlier probe, to see which inputs matter; output-0 vs output-1 counts tell AND/NAND from OR/NOR, and XOR flips with every input.
difficulty: 1-3
turns: multi
"""
import itertools
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_GATES = {
    "AND": lambda a, b: a & b,
    "OR": lambda a, b: a | b,
    "XOR": lambda a, b: a ^ b,
    "NAND": lambda a, b: 1 - (a & b),
    "NOR": lambda a, b: 1 - (a | b),
}
_ANSWERS = 2

# difficulty -> (inputs, shape, probes allowed); the budget is the worst case of a greedy prober.
_LEVELS = {1: (3, "chain", 7), 2: (4, "chain", 10), 3: (5, "tree", 18)}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


def _family(n, shape):
    """All circuits of the shape: chain = G2(G1(a,b),c), tree = G3(G1(a,b),G2(c,d)); inputs distinct."""
    out = []
    for a, b in itertools.combinations(range(n), 2):
        if shape == "chain":
            for c in range(n):
                if c not in (a, b):
                    out += [(g2, (g1, a, b), c) for g1, g2 in itertools.product(sorted(_GATES), repeat=2)]
        else:
            for c, d in itertools.combinations(range(n), 2):
                if len({a, b, c, d}) == 4 and (a, b) < (c, d):
                    out += [(g3, (g1, a, b), (g2, c, d))
                            for g1, g2, g3 in itertools.product(sorted(_GATES), repeat=3)]
    return out


def _eval(node, bits):
    if isinstance(node, int):
        return bits[node]
    return _GATES[node[0]](_eval(node[1], bits), _eval(node[2], bits))


def _text(node):
    if isinstance(node, int):
        return f"x{node + 1}"
    return f"{node[0]}({_text(node[1])},{_text(node[2])})"


def _parse(text):
    """Parse GATE(arg,arg) / xK into a node; raises ValueError."""
    toks = re.findall(r"[A-Za-z]+\d*|[(),]", text.replace(" ", ""))
    if "".join(toks) != text.replace(" ", ""):
        raise ValueError("unexpected characters")
    pos = [0]

    def node():
        tok = toks[pos[0]].upper() if pos[0] < len(toks) else ""
        pos[0] += 1
        if re.fullmatch(r"X\d+", tok):
            return int(tok[1:]) - 1
        if tok not in _GATES:
            raise ValueError(f"unknown gate or input {tok!r}")
        parts = []
        for sep in ("(", None, ",", None, ")"):
            if sep is None:
                parts.append(node())
            else:
                if pos[0] >= len(toks) or toks[pos[0]] != sep:
                    raise ValueError(f"expected {sep!r}")
                pos[0] += 1
        return (tok, parts[0], parts[1])

    tree = node()
    if pos[0] != len(toks):
        raise ValueError("trailing text")
    return tree


class CircuitProbeEnv:
    def __init__(self, max_turns=24, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        self.n, self.shape, self.probes = _LEVELS[difficulty]
        self._done = True

    def _bits(self, i):
        return [int(c) for c in format(i, f"0{self.n}b")]

    def _table(self, node):
        return tuple(_eval(node, self._bits(i)) for i in range(2 ** self.n))

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self._hidden = self._rng.choice(_family(self.n, self.shape))
        self._truth = self._table(self._hidden)
        self._log = []
        self._probes_left = self.probes
        self._answers_left = _ANSWERS
        self._turn = 0
        self._done = False
        xs = ", ".join(f"x{k + 1}" for k in range(self.n))
        form = ("G2(G1(xa,xb),xc)" if self.shape == "chain" else "G3(G1(xa,xb),G2(xc,xd))")
        ex = "XOR(AND(x1,x3),x2)" if self.shape == "chain" else "OR(AND(x1,x4),NOR(x2,x5))"
        obs = (
            f"A black box computes one output bit from inputs {xs}. Inside is a circuit of the form {form}: "
            f"each G is one of AND, OR, XOR, NAND, NOR and the x's are distinct inputs"
            f"{' (one input is unused)' if self.shape == 'tree' or self.n == 4 else ''}.\n"
            f"Actions: \\boxed{{probe {'1' + '0' * (self.n - 1)}}} sets the inputs x1..x{self.n} to those bits and "
            f"shows the output ({self.probes} probes allowed). \\boxed{{answer {ex}}} submits a circuit of the "
            f"same form; it is accepted if it computes the same function as the hidden circuit on every input. "
            f"You have {_ANSWERS} answers; a wrong one shows an input where they differ.\n"
            f"Success: an accepted answer. Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"probes_left": self._probes_left, "answers_left": self._answers_left, "turn": self._turn,
                "difficulty": self.difficulty}

    def step(self, action):
        if self._done:
            return "The episode is over.", 0.0, True, False, self._info()
        self._turn += 1
        obs, reward, terminated = self._play(_content(action))
        truncated = False
        if terminated:
            self._done = True
        elif self._turn >= self.max_turns:
            self._done, truncated, reward = True, True, 0.0
            obs += "\nTurn budget exhausted."
        return obs, reward, terminated, truncated, self._info()

    def _shape_ok(self, node):
        leaf = lambda x: isinstance(x, int)
        pair = lambda x: not leaf(x) and leaf(x[1]) and leaf(x[2])
        if leaf(node):
            return False
        if self.shape == "chain":
            ok = (pair(node[1]) and leaf(node[2])) or (pair(node[2]) and leaf(node[1]))
        else:
            ok = pair(node[1]) and pair(node[2])
        used = re.findall(r"x(\d+)", _text(node))
        return ok and len(set(used)) == len(used) and all(1 <= int(u) <= self.n for u in used)

    def _play(self, text):
        m = re.fullmatch(r"(?:probe\s*)?([01]+)", text, re.IGNORECASE)
        if m and len(m.group(1)) == self.n:
            if self._probes_left == 0:
                return "No probes left: submit \\boxed{answer ...}.", -0.05, False
            self._probes_left -= 1
            out = self._truth[int(m.group(1), 2)]
            self._log.append(f"{m.group(1)} -> {out}")
            return (f"Input {m.group(1)} gives output {out}. Probes left: {self._probes_left}.\n"
                    f"Probes so far: {'; '.join(self._log)}"), 0.0, False
        m = re.fullmatch(r"(?:answer\s*)?([A-Za-z].*)", text, re.IGNORECASE | re.DOTALL)
        try:
            node = _parse(m.group(1)) if m else None
        except (ValueError, IndexError):
            node = None
        if node is None or not self._shape_ok(node):
            return (f"Invalid action. Probe with exactly {self.n} bits, e.g. \\boxed{{probe {'0' * self.n}}}, "
                    f"or answer a circuit of the stated form with distinct inputs x1..x{self.n}."), -0.05, False
        table = self._table(node)
        if table == self._truth:
            return f"Correct! {_text(node)} matches the hidden circuit.", 1.0, True
        self._answers_left -= 1
        i = next(k for k in range(len(table)) if table[k] != self._truth[k])
        msg = (f"Wrong: on input {format(i, f'0{self.n}b')} your circuit outputs {table[i]} "
               f"but the box outputs {self._truth[i]}.")
        if self._answers_left == 0:
            return msg + " No answers left.", 0.0, True
        return msg + f" Answers left: {self._answers_left}.", 0.0, False

    def solution(self):
        # Greedy: probe the input whose worst-case outcome leaves the fewest consistent functions.
        tables = sorted({self._table(f) for f in _family(self.n, self.shape)})
        moves = []
        while len(tables) > 1:
            best = min(range(2 ** self.n),
                       key=lambda i: max(sum(t[i] for t in tables), sum(1 - t[i] for t in tables)))
            moves.append(f"\\boxed{{probe {format(best, f'0{self.n}b')}}}")
            tables = [t for t in tables if t[best] == self._truth[best]]
        return moves + [f"\\boxed{{answer {_text(self._hidden)}}}"]
