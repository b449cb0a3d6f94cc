# ruff: noqa: E501  (the templates hold generated code lines, which may be long)
"""Causal Inference families: find the switch behind an effect, learn a response law by
intervening, and localise the broken link of a causal chain."""

from __future__ import annotations

import random

from spade.templates._kit import Rendered, Spec, Style, assemble, compact_rendered, pick, scale

SKILL = "Causal Inference"

LABELS = [
    ["red", "blue", "green", "gold", "grey", "pink", "teal", "plum", "navy", "lime"],
    ["alpha", "bravo", "delta", "echo", "golf", "hotel", "kilo", "lima", "mike", "oscar"],
    ["oak", "elm", "ash", "fir", "yew", "pine", "palm", "teak", "beech", "cedar"],
]


def switch_cause(rng: random.Random) -> Rendered:
    """Flip switches to find the one that controls a lamp, then name it."""
    style = Style.draw(rng)
    labels = rng.choice(LABELS)
    test_word, answer_word = rng.choice(
        [("flip", "answer"), ("toggle", "blame"), ("press", "cause"), ("test", "pick")]
    )
    mode = rng.choice(["single", "pair"])
    names = {
        "labels": rng.choice(["labels", "switches", "buttons"]),
        "cause": rng.choice(["cause", "culprit", "wired", "key_switch"]),
        "state": rng.choice(["state", "positions", "on"]),
        "lamp": rng.choice(["_lamp", "_light", "_output"]),
        "n": rng.choice(["n", "count", "size"]),
        "budget": rng.choice(["budget", "tests_left", "probes"]),
        "test": test_word,
        "answer": answer_word,
        "const": rng.choice(["LABELS", "NAMES", "SWITCH_NAMES"]),
        "vocab": repr(labels),
    }
    if mode == "single":
        lamp = "def $lamp(self):\n    return self.$state[self.$cause]"
        desc = "Find which of several switches controls a lamp by flipping them."
        hint = "Flip one switch at a time; the lamp changes only when you flip the wired one."
        story = "Exactly one switch is wired to the lamp."
    else:
        lamp = "def $lamp(self):\n    return self.$state[self.$cause] != self.$state[$decoy]"
        names["decoy"] = "self.$labels[0] if self.$cause != self.$labels[0] else self.$labels[1]"
        desc = "Identify the switch that toggles a lamp whose state also depends on noise."
        hint = "Every flip of the wired switch changes the lamp; flips of others almost never do."
        story = "The lamp is wired to one switch (the first switch also interferes)."
    names["story"] = story
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$labels = $const[:self.$n]
    self.$cause = rng.choice(self.$labels[2:])
    self.$state = {s: rng.random() < 0.5 for s in self.$labels}
    self.$budget = self.$n + 1
    self.$turn = 0
    @start
    obs = (
        f"Switches: {', '.join(self.$labels)}. $story Lamp: {'on' if self.$lamp() else 'off'}. "
        f"\\boxed{{$test NAME}} flips a switch ({self.$budget} flips), \\boxed{{$answer NAME}} names it."
    )
    return obs, $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    words = text.lower().split()
    if len(words) != 2 or words[1] not in self.$labels or words[0] not in ("$test", "$answer"):
        return "Write '$test NAME' or '$answer NAME'.", $bad, False, False, $info
    verb, name = words
    if verb == "$answer":
        @end
        if name == self.$cause:
            return f"Yes, {name} controls the lamp.", 1.0, True, False, $info
        return f"No, it was {self.$cause}.", 0.0, True, False, $info
    if self.$budget <= 0:
        return "No flips left; name the switch.", $bad, False, False, $info
    self.$budget -= 1
    before = self.$lamp()
    self.$state[name] = not self.$state[name]
    after = "changed" if self.$lamp() != before else "did not change"
    return f"You flipped {name}. The lamp {after}. Flips left: {self.$budget}.", 0.0, False, False, $info
"""
    solution = rng.choice(
        [
            r"""
def solution(self):
    i = self.$labels.index(self.$cause)
    moves = [f"\\boxed{{$test {s}}}" for s in self.$labels[2:i + 1]]
    return moves + [f"\\boxed{{$answer {self.$cause}}}"]
""",
            r"""
def solution(self):
    return [f"\\boxed{{$answer {self.$cause}}}"]
""",
        ]
    )
    spec = Spec(
        skill=SKILL,
        family="switch_cause",
        description=desc,
        hint=hint,
        class_name=rng.choice(["SwitchCause", "WhichSwitch", "LampWiring", "FindCause", "Circuit"])
        + "Env",
        levels=[(names["n"], rng.choice([(4, 6, 8), (5, 7, 9), (4, 5, 7)]))],
        module=["$const = $vocab"],
        methods=[reset, step, solution],
        helpers=[lamp],
        names=names,
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def response_law(rng: random.Random) -> Rendered:
    """Set an input, observe the output, then predict the output at a new input."""
    style = Style.draw(rng)
    set_word, predict_word = rng.choice(
        [("set", "predict"), ("try", "answer"), ("dose", "forecast"), ("input", "final")]
    )
    names = {
        "a": rng.choice(["a", "slope", "gain"]),
        "b": rng.choice(["b", "base", "offset"]),
        "c": rng.choice(["c", "curve", "bend"]),
        "x": rng.choice(["x_star", "query_x", "target_x"]),
        "law": rng.choice(["_law", "_response", "_effect"]),
        "budget": rng.choice(["budget", "queries", "experiments"]),
        "set": set_word,
        "predict": predict_word,
    }
    kind = rng.choice(["linear", "quadratic"])
    if kind == "linear":
        law = "def $law(self, x):\n    return self.$a * x + self.$b + (self.$c * x * x if self.difficulty == 3 else 0)"
        desc = "Learn how an output responds to a controlled input, then predict it."
        hint = (
            "Two interventions fix a straight line; at the hardest level take three for the curve."
        )
    else:
        law = "def $law(self, x):\n    return self.$c * x * x + self.$a * x + self.$b"
        desc = "Probe a hidden quadratic response law by intervention and extrapolate it."
        hint = "Three measurements determine a quadratic; use second differences at x = 0, 1, 2."
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$a = rng.randint(2, 9) * self.difficulty
    self.$b = rng.randint(-20, 20)
    self.$c = rng.randint(1, 3)
    self.$x = rng.randint(12, 40)
    self.$budget = 4
    self.$turn = 0
    @start
    obs = (
        f"A machine maps x to y by a hidden law. \\boxed{{$set X}} runs it at x = X ({self.$budget} runs); "
        f"\\boxed{{$predict Y}} gives your y for x = {self.$x} (one try)."
    )
    return obs, $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    m = re.fullmatch(r"(\w+)\s+(-?\d+)", text.strip().lower())
    if not m or m.group(1) not in ("$set", "$predict"):
        return "Write '$set X' or '$predict Y'.", $bad, False, False, $info
    verb, value = m.group(1), int(m.group(2))
    if verb == "$predict":
        @end
        if value == self.$law(self.$x):
            return "Correct prediction!", 1.0, True, False, $info
        return f"Wrong, y was {self.$law(self.$x)}.", 0.0, True, False, $info
    if self.$budget <= 0:
        return "No runs left; make your prediction.", $bad, False, False, $info
    self.$budget -= 1
    return f"x = {value} gives y = {self.$law(value)}. Runs left: {self.$budget}.", 0.0, False, False, $info
"""
    solution = r"""
def solution(self):
    runs = [f"\\boxed{{$set {x}}}" for x in (0, 1, 2)]
    return runs + [f"\\boxed{{$predict {self.$law(self.$x)}}}"]
"""
    spec = Spec(
        skill=SKILL,
        family="response_law",
        description=desc,
        hint=hint,
        class_name=rng.choice(["ResponseLaw", "BlackBox", "DoseResponse", "Intervene", "Machine"])
        + "Env",
        levels=[],
        methods=[reset, step, solution],
        helpers=[law],
        names=names,
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def broken_chain(rng: random.Random) -> Rendered:
    """A signal passes through a chain of stages; probe stages to find the first broken one."""
    style = Style.draw(rng)
    noun = rng.choice(["relay", "pump", "station", "valve", "node"])
    probe_word, blame_word = rng.choice(
        [("probe", "broken"), ("check", "fault"), ("measure", "repair"), ("inspect", "blame")]
    )
    names = {
        "n": rng.choice(["n", "length", "stages"]),
        "bad_at": rng.choice(["bad_at", "fault", "broken_index"]),
        "budget": rng.choice(["budget", "checks", "probes_left"]),
        "probe": probe_word,
        "blame": blame_word,
        "noun": noun,
    }
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$bad_at = rng.randint(2, self.$n)
    self.$budget = self.$n.bit_length() + 1
    self.$turn = 0
    @start
    obs = (
        f"A signal passes $noun 1 to {self.$n} in order; one $noun is broken and stops it. "
        f"\\boxed{{$probe K}} tells if it reaches $noun K ({self.$budget} checks), \\boxed{{$blame K}} names the broken one."
    )
    return obs, $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    m = re.fullmatch(r"([a-z]+)\s*(\d+)", text.lower())
    if not m or m.group(1) not in ("$probe", "$blame") or not 1 <= int(m.group(2)) <= self.$n:
        return f"Write '$probe K' or '$blame K' with 1 <= K <= {self.$n}.", $bad, False, False, $info
    k = int(m.group(2))
    if m.group(1) == "$blame":
        @end
        if k == self.$bad_at:
            return f"Right, $noun {k} was broken.", 1.0, True, False, $info
        return f"No, it was $noun {self.$bad_at}.", 0.0, True, False, $info
    if self.$budget <= 0:
        return "No checks left.", $bad, False, False, $info
    self.$budget -= 1
    seen = "arrives" if k < self.$bad_at else "does not arrive"
    return f"The signal {seen} at $noun {k}. Checks left: {self.$budget}.", 0.0, False, False, $info
"""
    solution = rng.choice(
        [
            r"""
def solution(self):
    lo, hi, moves = 2, self.$n, []
    while lo < hi:
        mid = (lo + hi) // 2
        moves.append(f"\\boxed{{$probe {mid}}}")
        if mid < self.$bad_at:
            lo = mid + 1
        else:
            hi = mid
    return moves + [f"\\boxed{{$blame {lo}}}"]
""",
            r"""
def solution(self):
    return [f"\\boxed{{$blame {self.$bad_at}}}"]
""",
        ]
    )
    spec = Spec(
        skill=SKILL,
        family="broken_chain",
        description=rng.choice(
            [
                f"Localise the broken {noun} in a chain by testing where a signal stops.",
                "Find the first failing stage of a causal chain with few probes.",
            ]
        ),
        hint=rng.choice(
            [
                "If the signal arrives at K, the break is after K: bisect the chain.",
                "Probe the middle stage; each answer halves the suspects.",
            ]
        ),
        class_name=rng.choice(["BrokenChain", "FaultFinder", "SignalTrace", "Pipeline", "Relay"])
        + "Env",
        levels=[(names["n"], rng.choice([(8, 16, 32), (6, 12, 24), (10, 20, 40)]))],
        methods=[reset, step, solution],
        names=names,
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


FAMILIES = {
    "switch_cause": switch_cause,
    "response_law": response_law,
    "broken_chain": broken_chain,
}


# --- compact form -----------------------------------------------------------------------------


def compact_switch_cause(rng: random.Random) -> Rendered:
    """GameEnv: flip switches to find the one that controls a lamp, then name it."""
    n = pick(
        rng,
        labels=["labels", "levers", "keys", "names"],
        cause=["cause", "wired", "live"],
        lamp=["lamp", "light", "bulb"],
        flips=["flips", "budget", "tests"],
        name=["name", "which", "pick"],
    )
    n["test"], n["answer"] = rng.choice(
        [("flip", "answer"), ("toggle", "blame"), ("press", "cause"), ("test", "pick")]
    )
    n["vocab"] = rng.choice(
        [
            repr(rng.choice([LABELS[0], LABELS[2]])[:7]).replace("'", '"'),
            'list("abcdefg")',
            '[f"s{i}" for i in range(1, 8)]',
        ]
    )
    n["count"] = scale(rng, rng.choice([(4, 5, 7), (3, 5, 7), (4, 6, 7)]))
    n["budget"] = rng.choice(["len(self.$labels)", "len(self.$labels) + 1"])
    toggle = rng.choice(
        [
            ['self.$lamp = "off" if self.$lamp == "on" else "on"'],
            ["self.$lamp = {'on': 'off', 'off': 'on'}[self.$lamp]".replace("'", '"')],
        ]
    )
    n["intro"] = rng.choice(
        [
            'f"One of {self.$labels} runs the $lamp (now {self.$lamp}). '
            '\\\\boxed{{$test NAME}} (max {self.$flips}), \\\\boxed{{$answer NAME}}."',
            'f"The $lamp is {self.$lamp}. Which of {self.$labels} controls it? '
            '\\\\boxed{{$test NAME}}, then \\\\boxed{{$answer NAME}}."',
        ]
    )
    start = """
        def start(self, rng):
            self.$labels = $vocab[:$count]
            self.$cause = rng.choice(self.$labels)
            self.$lamp = rng.choice(["on", "off"])
            self.$flips = $budget
            return $intro
        """
    answer = rng.choice(
        [
            [
                'if verb == "$answer":',
                "    if $name == self.$cause:",
                '        return "Right!", 1.0, True',
                '    return f"No, it was {self.$cause}.", 0.0, True',
            ],
            [
                'if verb == "$answer":',
                "    won = $name == self.$cause",
                '    return ("Correct!" if won else "Wrong."), float(won), True',
            ],
        ]
    )
    move = """
        def move(self, action):
            verb, $name = action.lower().split()
            @answer
            if self.turn > self.$flips:
                return "No flips left.", 0.0, False
            if $name == self.$cause:
                @toggle
            return f"The $lamp is {self.$lamp}.", 0.0, False
        """
    solve = rng.choice(
        [
            """
            def solve(self):
                return ["$test " + self.$cause, "$answer " + self.$cause]
            """,
            """
            def solve(self):
                i = self.$labels.index(self.$cause)
                return [f"$test {s}" for s in self.$labels[:i]] + [f"$answer {self.$cause}"]
            """,
        ]
    )
    return compact_rendered(
        rng,
        skill=SKILL,
        family="switch_cause",
        base="GameEnv",
        class_names=[
            "SwitchCauseEnv",
            "WhichSwitchEnv",
            "LampWiringEnv",
            "FindCauseEnv",
            "CircuitEnv",
        ],
        descriptions=[
            "Find which switch controls a lamp by flipping them.",
            "Find the cause of an effect by intervening on switches.",
        ],
        hints=[
            "Flip one switch at a time; the lamp changes only when you flip the wired one.",
            "Intervene on a single switch and watch the lamp before you name the cause.",
        ],
        parts=[start, move, solve],
        names=n,
        blocks={"answer": answer, "toggle": toggle},
    )


def compact_response_law(rng: random.Random) -> Rendered:
    """GameEnv: set an input, observe the output, then predict the output at a new input."""
    n = pick(
        rng,
        a=["a", "slope", "gain"],
        b=["b", "base", "offset"],
        c=["c", "curve", "bend"],
        x=["x0", "query", "ask_x"],
        law=["law", "response", "effect", "output"],
        runs=["runs", "budget", "queries"],
        value=["value", "num", "v"],
    )
    n["set"], n["predict"] = rng.choice(
        [("set", "predict"), ("try", "answer"), ("dose", "forecast"), ("input", "final")]
    )
    quadratic = rng.choice(["never", "hard", "always"])
    n["draw_c"] = {
        "never": "0",
        "hard": "rng.randint(1, 3) if self.difficulty == 3 else 0",
        "always": "rng.randint(1, 3)",
    }[quadratic]
    n["draw_a"] = rng.choice(
        ["rng.randint(2, 9) * self.difficulty", "rng.randint(2, 6 * self.difficulty)"]
    )
    n["count"] = str(rng.choice([3, 4, 5]))
    draws = [
        "self.$a = $draw_a",
        "self.$b = rng.randint(-20, 20)",
        "self.$c = $draw_c",
        "self.$x = rng.randint(12, 40)",
    ]
    rng.shuffle(draws)
    n["intro"] = rng.choice(
        [
            'f"A machine maps x to y. \\\\boxed{{$set X}} runs it ({self.$runs} runs), '
            '\\\\boxed{{$predict Y}} guesses y at x = {self.$x}."',
            'f"Find y at x = {self.$x}: try \\\\boxed{{$set X}} ({self.$runs} times), '
            'then \\\\boxed{{$predict Y}}."',
        ]
    )
    start = """
        def start(self, rng):
            @draws
            self.$runs = $count
            return $intro
        """
    helper = rng.choice(
        [
            """
            def $law(self, x):
                return self.$c * x * x + self.$a * x + self.$b
            """,
            """
            def $law(self, x):
                return self.$a * x + self.$b + self.$c * x ** 2
            """,
        ]
    )
    move = """
        def move(self, action):
            verb, $value = action.lower().split()
            $value = int($value)
            if verb == "$predict":
                if $value == self.$law(self.$x):
                    return "Correct!", 1.0, True
                return f"Wrong, y was {self.$law(self.$x)}.", 0.0, True
            if self.turn > self.$runs:
                return "No runs left.", 0.0, False
            return f"x = {$value} gives y = {self.$law($value)}.", 0.0, False
        """
    solve = rng.choice(
        [
            """
            def solve(self):
                return ["$set 0", "$set 1", "$set 2", f"$predict {self.$law(self.$x)}"]
            """,
            """
            def solve(self):
                tests = [f"$set {x}" for x in range(3)]
                return tests + [f"$predict {self.$law(self.$x)}"]
            """,
        ]
    )
    parts = [start, helper, move, solve] if rng.random() < 0.5 else [start, move, helper, solve]
    return compact_rendered(
        rng,
        skill=SKILL,
        family="response_law",
        base="GameEnv",
        class_names=[
            "ResponseLawEnv",
            "BlackBoxEnv",
            "DoseResponseEnv",
            "InterveneEnv",
            "MachineEnv",
        ],
        descriptions=[
            "Learn how an output responds to an input, then predict it.",
            "Probe a hidden law by intervention and extrapolate it.",
        ],
        hints=[
            "Two interventions fix a straight line; a third reveals any curvature.",
            "Run the machine at x = 0, 1 and 2, then use the differences to find the law.",
        ],
        parts=parts,
        names=n,
        blocks={"draws": draws},
    )


def compact_broken_chain(rng: random.Random) -> Rendered:
    """GameEnv: a signal passes a chain of stages; probe stages to find the broken one."""
    n = pick(
        rng,
        size=["n", "size", "count"],
        bad=["bad", "fault", "broken"],
        checks=["checks", "budget", "probes"],
        k=["k", "stage", "pos"],
        verb=["verb", "cmd", "word"],
        moves=["moves", "plan", "steps"],
    )
    n["lo"], n["hi"] = rng.choice([("lo", "hi"), ("low", "high"), ("a", "b")])
    n["noun"] = rng.choice(["relay", "pump", "gate", "valve", "node"])
    n["probe"], n["blame"] = rng.choice(
        [("probe", "broken"), ("check", "fault"), ("test", "fix"), ("inspect", "blame")]
    )
    n["sizes"] = scale(rng, rng.choice([(8, 16, 32), (6, 12, 24), (10, 20, 40)]))
    n["budget"] = rng.choice(["self.$size.bit_length() + 1", "self.$size.bit_length()"])
    n["intro"] = rng.choice(
        [
            'f"One of ${noun}s 1..{self.$size} is broken. \\\\boxed{{$probe K}}: does a signal '
            'pass K? (max {self.$checks}) Then \\\\boxed{{$blame K}}."',
            'f"Find the broken $noun in 1..{self.$size}: \\\\boxed{{$probe K}} says if a signal '
            'passes K ({self.$checks} times); \\\\boxed{{$blame K}}."',
        ]
    )
    start = """
        def start(self, rng):
            self.$size = $sizes
            self.$bad = rng.randint(2, self.$size)
            self.$checks = $budget
            return $intro
        """
    report = rng.choice(
        [
            [
                'seen = "passes" if $k < self.$bad else "stops by"',
                'return f"The signal {seen} {$k}.", 0.0, False',
            ],
            [
                "if $k < self.$bad:",
                '    return f"Passes {$k}.", 0.0, False',
                'return f"Stops by {$k}.", 0.0, False',
            ],
        ]
    )
    parse = rng.choice(
        [
            ["$verb, $k = action.lower().split()", "$k = int($k)"],
            ["$verb, text = action.lower().split()", "$k = int(text)"],
        ]
    )
    move = """
        def move(self, action):
            @parse
            if $verb == "$blame":
                if $k == self.$bad:
                    return "Right!", 1.0, True
                return f"No, it was {self.$bad}.", 0.0, True
            if self.turn > self.$checks:
                return "No checks left.", 0.0, False
            @report
        """
    solve = rng.choice(
        [
            """
            def solve(self):
                $lo, $hi, $moves = 2, self.$size, []
                while $lo < $hi:
                    mid = ($lo + $hi) // 2
                    $moves.append(f"$probe {mid}")
                    $lo, $hi = (mid + 1, $hi) if mid < self.$bad else ($lo, mid)
                return $moves + [f"$blame {$lo}"]
            """,
            """
            def solve(self):
                return [f"$blame {self.$bad}"]
            """,
            """
            def solve(self):
                return ["$blame " + str(self.$bad)]
            """,
        ]
    )
    return compact_rendered(
        rng,
        skill=SKILL,
        family="broken_chain",
        base="GameEnv",
        class_names=[
            "BrokenChainEnv",
            "FaultFinderEnv",
            "SignalTraceEnv",
            "PipelineEnv",
            "RelayEnv",
        ],
        descriptions=[
            f"Find the broken {n['noun']} by testing where a signal stops.",
            "Find the failing stage of a causal chain with few probes.",
        ],
        hints=[
            "If the signal gets past K, the break is after K: bisect the chain.",
            "Probe the middle stage; each answer halves the suspects.",
        ],
        parts=[start, move, solve],
        names=n,
        blocks={"report": report, "parse": parse},
    )


COMPACT_FAMILIES = {
    "switch_cause": compact_switch_cause,
    "response_law": compact_response_law,
    "broken_chain": compact_broken_chain,
}
