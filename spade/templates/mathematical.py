# ruff: noqa: E501  (the templates hold generated code lines, which may be long)
"""Mathematical Reasoning families: bisection search, arithmetic evaluation, modular equations."""

from __future__ import annotations

import random

from spade.templates._kit import Rendered, Spec, Style, assemble, compact_rendered, pick, scale

SKILL = "Mathematical Reasoning"


def number_hunt(rng: random.Random) -> Rendered:
    """Find a hidden integer from directional feedback (binary search)."""
    style = Style.draw(rng)
    base = rng.choice([30, 40, 50, 60, 64, 80, 100])
    growth = rng.choice([3, 4, 5])
    highs = (base, base * growth, base * growth * growth)
    slack = rng.choice([0, 1, 2, 3])
    budget = tuple(h.bit_length() + slack for h in highs)
    up, down = rng.choice(
        [("higher", "lower"), ("too small", "too big"), ("go up", "go down"), ("more", "less")]
    )
    history = rng.random() < 0.4
    names = {
        "secret": rng.choice(["secret", "target", "hidden", "number", "code"]),
        "high": rng.choice(["high", "top", "limit", "upper"]),
        "tries": rng.choice(["tries", "guesses", "budget", "attempts"]),
        "up": up,
        "down": down,
        "win": rng.choice(["1.0", "1.0", "round(1.0 - 0.5 * self.$turn / self.$tries, 3)"]),
        "left": rng.choice(["", " Guesses left: {self.$tries - self.$turn}."]),
        "hist": " Tried so far: {self.log}." if history else "",
    }
    names["win"] = names["win"].replace("$turn", style.turn).replace("$tries", names["tries"])
    names["left"] = names["left"].replace("$turn", style.turn).replace("$tries", names["tries"])
    intro = rng.choice(
        [
            r'f"I picked a whole number from 1 to {self.$high}. Guess it in {self.$tries} tries. '
            r'Answer like \\boxed{{7}}."',
            r'f"Find the hidden integer between 1 and {self.$high} (inclusive). '
            r'You have {self.$tries} guesses; reply with \\boxed{{n}}."',
            r'f"A number in [1, {self.$high}] is hidden. Each wrong guess tells you which way to go. '
            r'Guesses: {self.$tries}. Format: \\boxed{{12}}."',
        ]
    )
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$secret = rng.randint(1, self.$high)
    self.$turn = 0
    @start
    @reset_extra
    return $intro, $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    if not re.fullmatch(r"-?\d+", text):
        return "Please answer with a whole number, e.g. \\boxed{5}.", $bad, False, False, $info
    guess = int(text)
    self.$turn += 1
    @hist
    if guess == self.$secret:
        @end
        return f"Correct, the number is {guess}!", $win, True, False, $info
    if self.$turn >= self.$tries:
        @end
        return f"Out of guesses. It was {self.$secret}.", 0.0, True, False, $info
    hint = "$up" if guess < self.$secret else "$down"
    return f"{guess} is wrong: {hint}.$left$hist", 0.0, False, False, $info
"""
    if rng.random() < 0.7:
        solution = r"""
def solution(self):
    lo, hi, moves = 1, self.$high, []
    while True:
        mid = (lo + hi) // 2
        moves.append(f"\\boxed{{{mid}}}")
        if mid == self.$secret:
            return moves
        if mid < self.$secret:
            lo = mid + 1
        else:
            hi = mid - 1
"""
    else:
        solution = r"""
def solution(self):
    return [f"\\boxed{{{self.$secret}}}"]
"""
    spec = Spec(
        skill=SKILL,
        family="number_hunt",
        description=rng.choice(
            [
                f"Find a hidden number with {up}/{down} feedback.",
                "Guess the secret integer by halving the search interval.",
                "Binary search for a hidden whole number.",
            ]
        ),
        hint=rng.choice(
            [
                "Always guess the middle of the numbers that are still possible.",
                "Halve the remaining interval with every guess.",
                f"Keep a low and a high bound; '{up}' means the number is above your guess.",
            ]
        ),
        class_name=rng.choice(["NumberHunt", "HiddenNumber", "GuessNumber", "HighLow", "Bisect"])
        + "Env",
        levels=[(names["high"], highs), (names["tries"], budget)],
        methods=[reset.replace("$intro", intro), step, solution],
        names=names,
        blocks={
            "hist": ["self.log.append(guess)"] if history else [],
            "reset_extra": ["self.log = []"] if history else [],
        },
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def arithmetic(rng: random.Random) -> Rendered:
    """Evaluate a generated expression (chain, sum of products, or modular power)."""
    style = Style.draw(rng)
    mode = rng.choice(["chain", "products", "power"])
    attempts = rng.choice([1, 1, 2, 3])
    names = {
        "answer": rng.choice(["answer", "value", "result", "expected"]),
        "expr": rng.choice(["expr", "question", "problem", "task"]),
        "size": rng.choice(["size", "terms", "n_terms", "length"]),
        "tries": rng.choice(["tries", "attempts", "chances"]),
        "big": str(rng.choice([9, 12, 15, 20, 25])),
    }
    if mode == "chain":
        sizes = rng.choice([(3, 4, 5), (3, 5, 7), (2, 3, 4), (4, 5, 6)])
        ops = rng.choice(["+-*", "+*", "+-", "*+-"])
        build = [
            "value = rng.randint(21, 60)",
            "parts = [str(value)]",
            "for _ in range(self.$size):",
            f'    op = rng.choice("{ops}")',
            "    x = rng.randint(2, $big)",
            '    value = value + x if op == "+" else value - x if op == "-" else value * x',
            '    parts.append(f"{op} {x}")',
            'self.$expr = " ".join(parts)',
            "self.$answer = value",
        ]
        ask = (
            r'f"Evaluate from left to right, ignoring the usual precedence: {self.$expr}. '
            r'Answer as \\boxed{{number}}."'
        )
        desc = "Evaluate an arithmetic chain strictly from left to right."
        hint = "Apply each operation to the running total in the order written."
    elif mode == "products":
        sizes = rng.choice([(2, 3, 4), (2, 3, 5), (3, 4, 5)])
        build = [
            "pairs = [(rng.randint(3, $big), rng.randint(3, $big)) for _ in range(self.$size)]",
            'self.$expr = " + ".join(f"{a}*{b}" for a, b in pairs)',
            "self.$answer = sum(a * b for a, b in pairs)",
        ]
        ask = r'f"Compute {self.$expr}. Reply with \\boxed{{value}}."'
        desc = "Compute a sum of products."
        hint = "Multiply each pair first, then add the products."
    else:
        sizes = rng.choice([(31, 97, 211), (37, 101, 499), (41, 127, 307)])
        build = [
            "base = rng.randint(2, $big)",
            "exp = rng.randint(5, 40)",
            "while pow(base, exp, self.$size) <= 20:",
            "    base += 1",
            'self.$expr = f"{base}^{exp} mod {self.$size}"',
            "self.$answer = pow(base, exp, self.$size)",
        ]
        ask = r'f"What is {self.$expr}? Give the remainder as \\boxed{{r}}."'
        desc = "Compute a modular power by repeated squaring."
        hint = (
            "Reduce modulo m after every multiplication; square-and-multiply keeps numbers small."
        )
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    @build
    self.$turn = 0
    @start
    return $ask, $info
"""
    feedback = rng.choice(
        [
            r'f"{guess} is not right."',
            r'f"Wrong: {guess} is too " + ("low." if guess < self.$answer else "high.")',
            r'"Incorrect, try again."',
        ]
    )
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    try:
        guess = int(text.replace(",", ""))
    except ValueError:
        return "Answer with one integer.", $bad, False, self.$turn >= self.max_turns, $info
    if guess == self.$answer:
        @end
        return "Correct!", 1.0, True, False, $info
    if self.$turn >= self.$tries:
        @end
        return f"Wrong. The answer was {self.$answer}.", 0.0, True, False, $info
    return $feedback, 0.0, False, False, $info
"""
    solution = r"""
def solution(self):
    return [f"\\boxed{{{self.$answer}}}"]
"""
    spec = Spec(
        skill=SKILL,
        family="arithmetic",
        description=desc,
        hint=hint,
        class_name=rng.choice(["Arithmetic", "Calculator", "ExprEval", "MentalMath", "Compute"])
        + "Env",
        levels=[(names["size"], sizes)],
        init=[f"self.$tries = {attempts}"],
        methods=[reset.replace("$ask", ask), step.replace("$feedback", feedback), solution],
        names=names,
        blocks={"build": build},
        turns="single" if attempts == 1 else "multi",
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def modular_equation(rng: random.Random) -> Rendered:
    """Solve a*x + b = c (mod m) for x, with the residue of each wrong guess as feedback."""
    style = Style.draw(rng)
    mods = rng.choice([(31, 101, 499), (37, 97, 211), (41, 113, 389), (29, 89, 307)])
    tries = rng.choice([(4, 4, 5), (3, 4, 5), (5, 6, 6), (6, 6, 8)])
    names = {
        "mod": rng.choice(["mod", "m", "modulus", "prime"]),
        "a": rng.choice(["a", "mult", "coef"]),
        "b": rng.choice(["b", "shift", "offset"]),
        "c": rng.choice(["c", "want", "goal"]),
        "x": rng.choice(["x", "root", "solution_x", "key"]),
        "tries": rng.choice(["tries", "chances", "limit"]),
    }
    names["a"], names["b"] = (names["a"], names["b"]) if names["a"] != names["b"] else ("a", "b")
    show = rng.random() < 0.6
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$a = rng.randint(2, self.$mod - 1)
    self.$b = rng.randint(0, self.$mod - 1)
    self.$x = rng.randint(21, self.$mod - 1)
    self.$c = (self.$a * self.$x + self.$b) % self.$mod
    self.$turn = 0
    @start
    text = (
        f"Find x with 0 <= x < {self.$mod} such that "
        f"({self.$a} * x + {self.$b}) mod {self.$mod} = {self.$c}. "
        f"You have {self.$tries} tries. Answer as \\boxed{{x}}."
    )
    return text, $info
"""
    wrong = (
        r'f"No: ({self.$a} * {x} + {self.$b}) mod {self.$mod} = '
        r'{(self.$a * x + self.$b) % self.$mod}, not {self.$c}."'
        if show
        else r'f"{x} does not satisfy the equation."'
    )
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    if not text.isdigit():
        return "Give a non-negative integer x.", $bad, False, False, $info
    x = int(text)
    if x == self.$x:
        @end
        return "Solved!", 1.0, True, False, $info
    if self.$turn >= self.$tries:
        @end
        return f"Out of tries; x was {self.$x}.", 0.0, True, False, $info
    return $wrong, 0.0, False, False, $info
"""
    solution = rng.choice(
        [
            r"""
def solution(self):
    for x in range(self.$mod):
        if (self.$a * x + self.$b) % self.$mod == self.$c:
            return [f"\\boxed{{{x}}}"]
    return []
""",
            r"""
def solution(self):
    inv = pow(self.$a, self.$mod - 2, self.$mod)
    x = (self.$c - self.$b) * inv % self.$mod
    return [f"\\boxed{{{x}}}"]
""",
        ]
    )
    spec = Spec(
        skill=SKILL,
        family="modular_equation",
        description="Solve a linear congruence modulo a prime.",
        hint=rng.choice(
            [
                "Subtract b, then multiply by the inverse of a modulo m (a^(m-2) mod m).",
                "x = (c - b) * a^-1 mod m; the modulus is prime, so the inverse exists.",
            ]
        ),
        class_name=rng.choice(["Congruence", "ModularLock", "ModSolve", "LinearMod", "Residue"])
        + "Env",
        levels=[(names["mod"], mods), (names["tries"], tries)],
        methods=[reset, step.replace("$wrong", wrong), solution],
        names=names,
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


FAMILIES = {
    "number_hunt": number_hunt,
    "arithmetic": arithmetic,
    "modular_equation": modular_equation,
}


# --- compact form -----------------------------------------------------------------------------


def compact_number_hunt(rng: random.Random) -> Rendered:
    """GameEnv: find a hidden integer from directional feedback (binary search)."""
    n = pick(
        rng,
        secret=["secret", "target", "hidden", "number"],
        top=["top", "high", "limit", "upper"],
        tries=["tries", "guesses", "budget", "chances"],
        guess=["guess", "n", "value", "x"],
        win=["1.0", "1.0", "round(1.0 - 0.5 * self.turn / self.$tries, 2)"],
    )
    base = rng.choice([30, 40, 50, 60, 64, 80, 100])
    growth = rng.choice([3, 4])
    highs = rng.choice([(base, 2 * base, 3 * base), (base, base * growth, base * growth**2)])
    slack = rng.choice([0, 1, 2])
    bits = (
        highs[0].bit_length() + slack,
        highs[1].bit_length() + slack,
        highs[2].bit_length() + slack,
    )
    n["up"], n["down"] = rng.choice([("higher", "lower"), ("too small", "too big"), ("up", "down")])
    n["Up"], n["Down"] = n["up"].capitalize(), n["down"].capitalize()
    n["high"] = scale(rng, highs)
    n["budget"] = rng.choice(
        [
            f"self.$top.bit_length() + {slack}" if slack else "self.$top.bit_length()",
            scale(rng, bits),
        ]
    )
    n["intro"] = rng.choice(
        [
            'f"I picked a whole number from 1 to {self.$top}. Find it in {self.$tries} guesses."',
            'f"Guess the hidden integer between 1 and {self.$top}. You have {self.$tries} tries."',
            'f"A number from 1 to {self.$top} is hidden. Guesses: {self.$tries}."',
        ]
    )
    setup = ["self.$secret = rng.randint(1, self.$top)", "self.$tries = $budget"]
    rng.shuffle(setup)
    start = """
        def start(self, rng):
            self.$top = $high
            @setup
            return $intro
        """
    move = rng.choice(
        [
            """
            def move(self, action):
                $guess = int(action)
                if $guess == self.$secret:
                    return "Correct!", $win, True
                if self.turn >= self.$tries:
                    return f"Out of guesses. It was {self.$secret}.", 0.0, True
                if $guess < self.$secret:
                    return "$Up.", 0.0, False
                return "$Down.", 0.0, False
            """,
            """
            def move(self, action):
                $guess = int(action)
                if $guess == self.$secret:
                    return f"Yes, {$guess} is right!", $win, True
                word = "$up" if $guess < self.$secret else "$down"
                left = self.$tries - self.turn
                if left <= 0:
                    return f"No guesses left; it was {self.$secret}.", 0.0, True
                return f"{$guess} is wrong, go {word}. Guesses left: {left}.", 0.0, False
            """,
            """
            def move(self, action):
                $guess = int(action)
                over = self.turn >= self.$tries
                if $guess > self.$secret:
                    return "$Down." + (" Game over." if over else ""), 0.0, over
                if $guess < self.$secret:
                    return "$Up." + (" Game over." if over else ""), 0.0, over
                return "You found it!", $win, True
            """,
        ]
    )
    solve = rng.choice(
        [
            """
            def solve(self):
                low, high, moves = 1, self.$top, []
                while True:
                    mid = (low + high) // 2
                    moves.append(mid)
                    if mid == self.$secret:
                        return moves
                    low, high = (mid + 1, high) if mid < self.$secret else (low, mid - 1)
            """,
            """
            def solve(self):
                return [self.$secret]
            """,
        ]
    )
    return compact_rendered(
        rng,
        skill=SKILL,
        family="number_hunt",
        base="GameEnv",
        class_names=[
            "NumberHuntEnv",
            "HiddenNumberEnv",
            "GuessNumberEnv",
            "HighLowEnv",
            "BisectEnv",
        ],
        descriptions=[
            f"Find a hidden number with {n['up']}/{n['down']} feedback.",
            "Guess the secret integer by halving the search interval.",
            "Binary search for a hidden whole number.",
        ],
        hints=[
            "Always guess the middle of the numbers that are still possible.",
            "Halve the remaining interval with every guess.",
            f"Keep a low and a high bound; '{n['up']}' means the number is above your guess.",
        ],
        parts=[start, move, solve],
        names=n,
        blocks={"setup": setup},
    )


def compact_arithmetic(rng: random.Random) -> Rendered:
    """QuestionEnv: evaluate a generated expression (chain, sum of products, modular power)."""
    n = pick(
        rng,
        total=["total", "value", "result", "answer"],
        text=["text", "expr", "problem", "shown"],
        x=["x", "num", "term", "k"],
        op=["op", "sign", "symbol"],
        m=["m", "mod", "p"],
        e=["e", "power", "exp"],
        pairs=["pairs", "terms", "factors"],
    )
    n["a"], n["b"] = rng.choice([("a", "b"), ("x", "y"), ("u", "v")])
    mode = rng.choice(["chain", "products", "power"])
    attempts = rng.choice([1, 1, 2, 3])
    blocks: dict[str, list[str]] = {}
    if mode == "chain":
        n["size"] = scale(rng, rng.choice([(3, 4, 5), (2, 3, 4), (3, 5, 7), (4, 5, 6)]))
        n["ops"] = rng.choice(['"+-*"', '"+*"', '"*+-"', '"+-"'])
        n["big"] = str(rng.choice([5, 6, 9]))
        blocks["apply"] = rng.choice(
            [
                [
                    'if $op == "+":',
                    "    $total += $x",
                    'elif $op == "-":',
                    "    $total -= $x",
                    "else:",
                    "    $total *= $x",
                ],
                [
                    '$total = $total + $x if $op == "+" else $total - $x if $op == "-" else $total * $x'
                ],
            ]
        )
        generate = """
            def generate(self, rng):
                $total = rng.randint(21, 60)
                $text = str($total)
                for _ in range($size):
                    $op = rng.choice($ops)
                    $x = rng.randint(2, $big)
                    $text += f" {$op} {$x}"
                    @apply
                return $ask, $total
            """
        n["ask"] = rng.choice(
            [
                'f"Evaluate strictly from left to right, ignoring precedence: {$text}"',
                'f"Work left to right (no operator precedence): {$text} = ?"',
            ]
        )
        hint = "Apply each operation to the running total in the order written."
        description = "Evaluate an arithmetic chain strictly from left to right."
    elif mode == "products":
        n["size"] = scale(rng, rng.choice([(2, 3, 4), (2, 3, 5), (3, 4, 5)]))
        n["big"] = str(rng.choice([9, 12, 15, 20]))
        generate = rng.choice(
            [
                """
                def generate(self, rng):
                    $pairs = [(rng.randint(3, $big), rng.randint(3, $big)) for _ in range($size)]
                    $text = " + ".join(f"{$a} * {$b}" for $a, $b in $pairs)
                    return $ask, sum($a * $b for $a, $b in $pairs)
                """,
                """
                def generate(self, rng):
                    $pairs, $total = [], 0
                    for _ in range($size):
                        $a, $b = rng.randint(3, $big), rng.randint(3, $big)
                        $pairs.append(f"{$a}*{$b}")
                        $total += $a * $b
                    $text = " + ".join($pairs)
                    return $ask, $total
                """,
            ]
        )
        n["ask"] = rng.choice(['f"Compute {$text}."', 'f"What is {$text}?"'])
        hint = "Multiply each pair first, then add the products."
        description = "Compute a sum of products."
    else:
        n["mod"] = scale(rng, rng.choice([(97, 211, 499), (101, 307, 1009), (127, 257, 509)]))
        generate = rng.choice(
            [
                """
                def generate(self, rng):
                    $m = $mod
                    $x = rng.randint(2, $m - 1)
                    $e = rng.randint(5, 40)
                    return $ask, pow($x, $e, $m)
                """,
                """
                def generate(self, rng):
                    $e, $m = rng.randint(5, 40), $mod
                    $x = rng.randint(2, $m - 1)
                    $total = pow($x, $e, $m)
                    return $ask, $total
                """,
                """
                def generate(self, rng):
                    $m, $e = $mod, rng.randint(5, 40)
                    $x = rng.randint(2, $m - 1)
                    $total = 1
                    for _ in range($e):
                        $total = $total * $x % $m
                    return $ask, $total
                """,
            ]
        )
        n["ask"] = rng.choice(
            [
                'f"What is {$x}^{$e} mod {$m}?"',
                'f"Find the remainder of {$x} to the power {$e} divided by {$m}."',
            ]
        )
        hint = (
            "Reduce modulo m after every multiplication; square-and-multiply keeps numbers small."
        )
        description = "Compute a modular power by repeated squaring."
    return compact_rendered(
        rng,
        skill=SKILL,
        family="arithmetic",
        base="QuestionEnv",
        class_names=[
            "ArithmeticEnv",
            "CalculatorEnv",
            "ExprEvalEnv",
            "MentalMathEnv",
            "ComputeEnv",
        ],
        descriptions=[description],
        hints=[hint],
        parts=[f"attempts = {attempts}" if attempts > 1 else "", generate],
        names=n,
        blocks=blocks,
    )


def compact_modular_equation(rng: random.Random) -> Rendered:
    """QuestionEnv: solve a*x + b = c (mod p) for x."""
    n = pick(
        rng,
        m=["m", "p", "mod", "prime"],
        a=["a", "mult", "coef"],
        b=["b", "shift", "offset"],
        c=["c", "goal", "rhs"],
        x=["x", "root", "key", "sol"],
    )
    primes = rng.choice([(37, 101, 499), (41, 113, 389), (43, 97, 211), (53, 131, 307)])
    table = rng.choice(["", "", "PRIMES", "MODULI"])
    n["primes"] = f"self.{table}[self.difficulty - 1]" if table else scale(rng, primes)
    n["v"] = rng.choice(["v", "t", "guess"])
    shifted = rng.random() < 0.6
    n["ask"] = rng.choice(
        [
            'f"Find x with 0 <= x < {$m} such that ({$a} * x + {$b}) mod {$m} = {$c}."',
            'f"Solve {$a}x + {$b} = {$c} (mod {$m}) for x in 0..{$m - 1}."',
        ]
        if shifted
        else [
            'f"Find x with 0 <= x < {$m} such that {$a} * x mod {$m} = {$c}."',
            'f"Solve {$a}x = {$c} (mod {$m}) for x in 0..{$m - 1}."',
        ]
    )
    draw_b = ["$b = rng.randint(1, $m - 1)"] if shifted else []
    lhs = "($a * $v + $b) % $m" if shifted else "$a * $v % $m"
    body = rng.choice(
        [
            [
                "$m = $primes",
                "$a = rng.randint(2, $m - 1)",
                *draw_b,
                "$x = rng.randint(21, $m - 1)",
                "$c = ($a * $x + $b) % $m" if shifted else "$c = $a * $x % $m",
            ],
            [
                "$m = $primes",
                *draw_b,
                "$x = rng.randrange(21, $m)",
                "$a = rng.randrange(2, $m)",
                "$c = ($a * $x + $b) % $m" if shifted else "$c = $a * $x % $m",
            ],
            [
                "$m = $primes",
                "$a, $x = rng.randint(2, $m - 1), rng.randint(21, $m - 1)",
                *draw_b,
                f"$c = next($v for $v in range($m) if $v == {lhs.replace('$v', '$x')})",
            ],
        ]
    )
    body.append("return $ask, $x")
    attempts = rng.choice([1, 1, 2])
    return compact_rendered(
        rng,
        skill=SKILL,
        family="modular_equation",
        base="QuestionEnv",
        class_names=[
            "CongruenceEnv",
            "ModularLockEnv",
            "ModSolveEnv",
            "LinearModEnv",
            "ResidueEnv",
        ],
        descriptions=[
            "Solve a linear congruence modulo a prime.",
            "Find the unknown of a modular equation.",
        ],
        hints=[
            "Subtract b, then multiply by the inverse of a modulo m (a^(m-2) mod m).",
            "x = (c - b) * a^-1 mod m; the modulus is prime, so the inverse exists.",
            "Find the number that a times gives 1 modulo m, and use it to undo the multiplication.",
        ],
        parts=[
            f"{table} = {primes}" if table else "",
            f"attempts = {attempts}" if attempts > 1 else "",
            "def generate(self, rng):\n    @body",
        ],
        names=n,
        blocks={"body": body},
    )


COMPACT_FAMILIES = {
    "number_hunt": compact_number_hunt,
    "arithmetic": compact_arithmetic,
    "modular_equation": compact_modular_equation,
}
