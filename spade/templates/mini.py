"""Mini families: one-question environments of 5-9 lines on the `QuestionEnv` scaffold.

    from spade.templates.mini import MINI_FAMILIES, render_mini
    program = render_mini(random.Random(3), "sum")          # a Rendered, form "compact"

The 18 template families of this package are 10-30 lines each, and five minutes of a 2-core
CPU show the embedded 135M model each of them only a few dozen times: it learns their look but
recombines lines of different programs into code that raises (docs/warmstart.md). A mini
program is the smallest useful environment: draw a few numbers or words from `rng`, compute the
answer, return `(question, answer)`, like the example in the compact Designer prompt. They are
short and share one shape, so a line taken from one fits in another; and their questions are
easy enough that the small model wins some of them as the Agent, which self-play needs.

Three families per game skill; the last of each skill (`MINI_EVAL_FAMILIES`) is never trained
on. One render of every family (held out or not) is in the evaluation set
(`spade.evals.sets.eval_programs`). Every render passes
the real validator (`tests/templates/test_templates.py`).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from spade.templates._kit import Rendered

NAMES = ("Ann", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jo")
ITEMS = ("apples", "books", "coins", "cups", "pens", "shells", "stamps", "cards", "keys")


def _code(name: str, doc: str, body: list[str]) -> str:
    lines = [f"class {name}(QuestionEnv):", f'    """{doc}"""', "", "    def generate(self, rng):"]
    return "\n".join(lines + [f"        {line}" for line in body]) + "\n"


def _top(rng: random.Random, options: tuple[int, int, int]) -> str:
    a, b, c = options
    return rng.choice([f"({a}, {b}, {c})[self.difficulty - 1]", f"{a} * self.difficulty"])


def _pick(rng: random.Random, *options: str) -> str:
    return rng.choice(options)


# --- Mathematical Reasoning -------------------------------------------------------------------


def sum_(rng: random.Random) -> Rendered:
    a, b = _pick(rng, "a", "x", "first"), _pick(rng, "b", "y", "second")
    top = _top(rng, rng.choice([(10, 50, 200), (20, 100, 500), (9, 99, 999)]))
    ask = _pick(rng, "What is {a} + {b}?", "Add {a} and {b}.", "Compute {a} plus {b}.")
    body = [
        f"top = {top}",
        f"{a}, {b} = rng.randint(2, top), rng.randint(2, top)",
        "return f" + repr(ask.format(a="{" + a + "}", b="{" + b + "}")) + f", {a} + {b}",
    ]
    name = _pick(rng, "SumEnv", "AddEnv", "PlusEnv", "AdditionEnv")
    doc = _pick(rng, "Add two numbers.", "The sum of two whole numbers.")
    return Rendered(
        _code(name, doc, body),
        "Add the ones first, then the tens.",
        "Mathematical Reasoning",
        "sum",
        "compact",
    )


def product(rng: random.Random) -> Rendered:
    a, b = _pick(rng, "a", "x", "n"), _pick(rng, "b", "y", "m")
    top = _top(rng, rng.choice([(5, 9, 12), (6, 10, 15), (4, 8, 12)]))
    ask = _pick(rng, "What is {a} times {b}?", "Multiply {a} by {b}.", "Compute {a} * {b}.")
    body = [
        f"{a} = rng.randint(2, {top})",
        f"{b} = rng.randint(2, 9)",
        "return f" + repr(ask.format(a="{" + a + "}", b="{" + b + "}")) + f", {a} * {b}",
    ]
    name = _pick(rng, "TimesEnv", "ProductEnv", "MultiplyEnv")
    doc = _pick(rng, "Multiply two numbers.", "The product of two small numbers.")
    return Rendered(
        _code(name, doc, body),
        "Use the times table; split a big factor into tens and ones.",
        "Mathematical Reasoning",
        "product",
        "compact",
    )


def difference(rng: random.Random) -> Rendered:
    a, b = _pick(rng, "a", "big"), _pick(rng, "b", "small")
    top = _top(rng, rng.choice([(20, 100, 500), (30, 90, 300)]))
    ask = _pick(rng, "What is {a} minus {b}?", "Subtract {b} from {a}.", "Compute {a} - {b}.")
    body = [
        f"{a} = rng.randint(10, {top})",
        f"{b} = rng.randint(1, {a})",
        "return f" + repr(ask.format(a="{" + a + "}", b="{" + b + "}")) + f", {a} - {b}",
    ]
    name = _pick(rng, "MinusEnv", "DifferenceEnv", "SubtractEnv")
    doc = _pick(rng, "Subtract one number from another.", "The difference of two numbers.")
    return Rendered(
        _code(name, doc, body),
        "Count up from the smaller number to the larger.",
        "Mathematical Reasoning",
        "difference",
        "compact",
    )


# --- Logical Deduction ------------------------------------------------------------------------


def larger(rng: random.Random) -> Rendered:
    top = _top(rng, rng.choice([(50, 500, 5000), (99, 999, 9999)]))
    ask = _pick(rng, "Which is larger, {a} or {b}?", "Which number is bigger: {a} or {b}?")
    body = [
        f"a, b = rng.sample(range(2, {top}), 2)",
        "return f" + repr(ask.format(a="{a}", b="{b}")) + ", max(a, b)",
    ]
    name = _pick(rng, "LargerEnv", "BiggerEnv", "CompareEnv")
    doc = _pick(rng, "Pick the larger of two numbers.", "Compare two numbers.")
    return Rendered(
        _code(name, doc, body),
        "Compare the number of digits first, then digit by digit.",
        "Logical Deduction",
        "larger",
        "compact",
    )


def parity(rng: random.Random) -> Rendered:
    top = _top(rng, rng.choice([(20, 200, 2000), (50, 500, 5000)]))
    ask = _pick(rng, "Is {n} even or odd?", "Is the number {n} odd or even?")
    word = _pick(rng, '"even" if n % 2 == 0 else "odd"', '["even", "odd"][n % 2]')
    body = [
        f"n = rng.randint(3, {top})",
        "return f" + repr(ask.format(n="{n}")) + f", {word}",
    ]
    name = _pick(rng, "ParityEnv", "EvenOddEnv", "OddEvenEnv")
    doc = _pick(rng, "Tell whether a number is even or odd.", "Parity of a whole number.")
    return Rendered(
        _code(name, doc, body),
        "Only the last digit matters.",
        "Logical Deduction",
        "parity",
        "compact",
    )


def older(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "{p} is {a} years old and {q} is {b}. Who is older?",
        "{p} is {a} and {q} is {b} years old. Who is older?",
    )
    body = [
        f"p, q = rng.sample({list(NAMES)!r}, 2)",
        "a, b = rng.sample(range(5, 20 * self.difficulty + 10), 2)",
        "return f" + repr(ask.format(p="{p}", q="{q}", a="{a}", b="{b}")) + ", p if a > b else q",
    ]
    name = _pick(rng, "OlderEnv", "AgeEnv", "WhoIsOlderEnv")
    doc = _pick(rng, "Who is older of two people.", "Compare two ages.")
    return Rendered(
        _code(name, doc, body),
        "The older one has the larger age.",
        "Logical Deduction",
        "older",
        "compact",
    )


# --- Spatial Reasoning ------------------------------------------------------------------------


def steps(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "You stand at {x} on a number line and move {k} steps to the right. Where are you?",
        "A token at position {x} moves {k} squares right. Where is it now?",
    )
    body = [
        f"x = rng.randint(0, {_top(rng, (10, 50, 100))})",
        "k = rng.randint(2, 9 * self.difficulty)",
        "return f" + repr(ask.format(x="{x}", k="{k}")) + ", x + k",
    ]
    name = _pick(rng, "StepsEnv", "NumberLineEnv", "MoveRightEnv")
    doc = _pick(rng, "Move along a number line.", "Where a token ends after some steps.")
    return Rendered(
        _code(name, doc, body),
        "Moving right adds the steps to the position.",
        "Spatial Reasoning",
        "steps",
        "compact",
    )


def grid_distance(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "How many steps from ({x1}, {y1}) to ({x2}, {y2}) moving only up, down, left or right?",
        "A walker goes from ({x1}, {y1}) to ({x2}, {y2}) one square at a time, "
        "no diagonals. How many steps?",
    )
    body = [
        f"size = {_top(rng, (5, 10, 20))}",
        "x1, y1, x2, y2 = (rng.randint(0, size) for _ in range(4))",
        "return f"
        + repr(ask.format(x1="{x1}", y1="{y1}", x2="{x2}", y2="{y2}"))
        + ", abs(x1 - x2) + abs(y1 - y2)",
    ]
    name = _pick(rng, "GridStepsEnv", "ManhattanEnv", "CityBlockEnv")
    doc = _pick(rng, "Steps between two grid points.", "Distance on a grid without diagonals.")
    return Rendered(
        _code(name, doc, body),
        "Count the horizontal and the vertical steps separately, then add them.",
        "Spatial Reasoning",
        "grid_distance",
        "compact",
    )


def turns(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "You face north and turn right {k} times (90 degrees each). Which way do you face?",
        "Facing north, you make {k} quarter turns clockwise. Which direction do you face now?",
    )
    body = [
        "k = rng.randint(1, 4 * self.difficulty)",
        'faces = ["north", "east", "south", "west"]',
        "return f" + repr(ask.format(k="{k}")) + ", faces[k % 4]",
    ]
    name = _pick(rng, "TurnEnv", "CompassEnv", "FacingEnv")
    doc = _pick(rng, "Turn right some times and name the direction.", "Compass turns.")
    return Rendered(
        _code(name, doc, body),
        "Four right turns bring you back where you started.",
        "Spatial Reasoning",
        "turns",
        "compact",
    )


# --- Pattern Recognition ----------------------------------------------------------------------


def next_step(rng: random.Random) -> Rendered:
    ask = _pick(rng, "What comes next: {shown}, ?", "Continue the sequence: {shown}, ...")
    body = [
        "start, step = rng.randint(1, 20), rng.randint(2, 3 * self.difficulty + 2)",
        "terms = [start + step * i for i in range(4)]",
        'shown = ", ".join(str(t) for t in terms)',
        "return f" + repr(ask.format(shown="{shown}")) + ", terms[-1] + step",
    ]
    name = _pick(rng, "NextTermEnv", "SequenceEnv", "ArithmeticRunEnv")
    doc = _pick(rng, "Continue an arithmetic sequence.", "The next term of a sequence.")
    return Rendered(
        _code(name, doc, body),
        "Look at the difference between neighbours.",
        "Pattern Recognition",
        "next_step",
        "compact",
    )


def repeat(rng: random.Random) -> Rendered:
    ask = _pick(
        rng, "What comes next: {shown} ?", "Which letter continues the pattern {shown} ...?"
    )
    body = [
        'unit = rng.sample("ABCDEFGH", self.difficulty + 1)',
        "n = rng.randint(len(unit) + 1, 3 * len(unit))",
        'shown = " ".join(unit[i % len(unit)] for i in range(n))',
        "return f" + repr(ask.format(shown="{shown}")) + ", unit[n % len(unit)]",
    ]
    name = _pick(rng, "RepeatEnv", "LetterCycleEnv", "PatternEnv")
    doc = _pick(rng, "Continue a repeating pattern of letters.", "A cycle of letters.")
    return Rendered(
        _code(name, doc, body),
        "Find the block that repeats, then count where you are in it.",
        "Pattern Recognition",
        "repeat",
        "compact",
    )


def doubling(rng: random.Random) -> Rendered:
    ask = _pick(rng, "What comes next: {shown}, ?", "Continue: {shown}, ...")
    body = [
        "start, ratio = rng.randint(1, 5), rng.randint(2, self.difficulty + 1)",
        "terms = [start * ratio ** i for i in range(4)]",
        'shown = ", ".join(str(t) for t in terms)',
        "return f" + repr(ask.format(shown="{shown}")) + ", terms[-1] * ratio",
    ]
    name = _pick(rng, "DoublingEnv", "GeometricEnv", "RatioEnv")
    doc = _pick(rng, "Continue a geometric sequence.", "Each term is a multiple of the one before.")
    return Rendered(
        _code(name, doc, body),
        "Divide a term by the one before it.",
        "Pattern Recognition",
        "doubling",
        "compact",
    )


# --- Optimization -----------------------------------------------------------------------------


def smallest(rng: random.Random) -> Rendered:
    ask = _pick(rng, "Which is the smallest of {shown}?", "What is the lowest price among {shown}?")
    body = [
        f"values = rng.sample(range(3, 100), {_top(rng, (3, 5, 8))})",
        'shown = ", ".join(str(v) for v in values)',
        "return f" + repr(ask.format(shown="{shown}")) + ", min(values)",
    ]
    name = _pick(rng, "SmallestEnv", "MinimumEnv", "CheapestEnv")
    doc = _pick(rng, "Find the minimum of a list.", "The cheapest of several prices.")
    return Rendered(
        _code(name, doc, body),
        "Keep the best so far and compare each new value with it.",
        "Optimization",
        "smallest",
        "compact",
    )


def fit(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "A bag holds {cap} kg. Each stone weighs {w} kg. How many stones fit at most?",
        "A shelf is {cap} cm long and each box is {w} cm wide. How many boxes fit at most?",
    )
    body = [
        "w = rng.randint(2, 9)",
        f"cap = rng.randint(w, {_top(rng, (30, 60, 120))})",
        "return f" + repr(ask.format(cap="{cap}", w="{w}")) + ", cap // w",
    ]
    name = _pick(rng, "FitEnv", "PackEnv", "CapacityEnv")
    doc = _pick(rng, "Fit as many equal items as possible.", "Most items under a limit.")
    return Rendered(
        _code(name, doc, body),
        "Divide the capacity by the size and round down.",
        "Optimization",
        "fit",
        "compact",
    )


def best_pair(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "Pick two different numbers from {shown} with the largest sum. What is the sum?",
        "Choose two of {shown} to make the biggest total. What is it?",
    )
    body = [
        f"values = rng.sample(range(1, 50), {_top(rng, (3, 5, 7))})",
        'shown = ", ".join(str(v) for v in values)',
        "top = sorted(values)[-2:]",
        "return f" + repr(ask.format(shown="{shown}")) + ", sum(top)",
    ]
    name = _pick(rng, "BestPairEnv", "TopTwoEnv", "MaxPairEnv")
    doc = _pick(rng, "The largest sum of two numbers from a list.", "Pick the best pair.")
    return Rendered(
        _code(name, doc, body),
        "Take the two largest numbers.",
        "Optimization",
        "best_pair",
        "compact",
    )


# --- Causal Inference -------------------------------------------------------------------------


def makes(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "Each {x} makes {k} {y}. There are {n} {x}. How many {y} are made?",
        "One {x} gives {k} {y}. How many {y} do {n} {x} give?",
    )
    pairs = rng.choice(
        [("hens", "eggs"), ("trees", "apples"), ("machines", "cups"), ("bees", "drops")]
    )
    body = [
        f"x, y = {pairs!r}",
        f"k, n = rng.randint(2, 9), rng.randint(2, {_top(rng, (5, 10, 20))})",
        "return f" + repr(ask.format(x="{x}", y="{y}", k="{k}", n="{n}")) + ", k * n",
    ]
    name = _pick(rng, "ProduceEnv", "YieldEnv", "OutputEnv")
    doc = _pick(rng, "Total effect of several equal causes.", "How much several makers make.")
    return Rendered(
        _code(name, doc, body),
        "Each cause adds the same amount: multiply.",
        "Causal Inference",
        "makes",
        "compact",
    )


def lamp(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "The lamp glows only when switch {s} is on. Switch {s} is {state}. Does the lamp glow?",
        "Switch {s} alone powers the lamp. It is {state}. Is the lamp lit?",
    )
    body = [
        'state = rng.choice(["on", "off"])',
        f"s = rng.choice({list('ABCDEFGH'[: 3 + rng.randint(0, 5)])!r})",
        "return f"
        + repr(ask.format(s="{s}", state="{state}"))
        + ', "yes" if state == "on" else "no"',
    ]
    name = _pick(rng, "LampEnv", "SwitchEnv", "CircuitEnv")
    doc = _pick(rng, "Does the effect follow from its cause?", "A lamp and its switch.")
    return Rendered(
        _code(name, doc, body),
        "The lamp follows its switch.",
        "Causal Inference",
        "lamp",
        "compact",
    )


def which_switch(rng: random.Random) -> Rendered:
    ask = _pick(
        rng,
        "Switch {a} lights lamp 1 and switch {b} lights lamp 2. Only lamp {lit} is on. "
        "Which switch was flipped?",
        "Lamp 1 answers to switch {a}, lamp 2 to switch {b}. Lamp {lit} is lit. "
        "Which switch is on?",
    )
    body = [
        f"a, b = rng.sample({list(NAMES[: 4 + 2 * rng.randint(0, 3)])!r}, 2)",
        "lit = rng.choice([1, 2])",
        "return f" + repr(ask.format(a="{a}", b="{b}", lit="{lit}")) + ", a if lit == 1 else b",
    ]
    name = _pick(rng, "WhichSwitchEnv", "CauseEnv", "WiringEnv")
    doc = _pick(rng, "Name the cause of an effect.", "Which switch lit the lamp.")
    return Rendered(
        _code(name, doc, body),
        "Match the lit lamp to its switch.",
        "Causal Inference",
        "which_switch",
        "compact",
    )


MINI_FAMILIES: dict[str, Callable[[random.Random], Rendered]] = {
    "sum": sum_,
    "product": product,
    "difference": difference,
    "larger": larger,
    "parity": parity,
    "older": older,
    "steps": steps,
    "grid_distance": grid_distance,
    "turns": turns,
    "next_step": next_step,
    "repeat": repeat,
    "doubling": doubling,
    "smallest": smallest,
    "fit": fit,
    "best_pair": best_pair,
    "makes": makes,
    "lamp": lamp,
    "which_switch": which_switch,
}
"""Family name -> render function; three per game skill, the held-out one last."""

MINI_EVAL_FAMILIES = ("difference", "older", "turns", "doubling", "best_pair", "which_switch")
"""One mini family per skill that no warm start trains on (evaluation only)."""


def render_mini(rng: random.Random, family: str | None = None) -> Rendered:
    """One mini program of `family` (None: a random family)."""
    name = family if family is not None else rng.choice(sorted(MINI_FAMILIES))
    return MINI_FAMILIES[name](rng)


def render_mini_many(
    count: int, seed: int = 0, families: list[str] | None = None
) -> list[Rendered]:
    """`count` mini programs drawn in turn from `families` (None: the training families,
    `MINI_EVAL_FAMILIES` left out). Repeats are allowed: a family with few variants (the
    letter cycles have a dozen) is shown as often as the others."""
    names = families or [f for f in sorted(MINI_FAMILIES) if f not in MINI_EVAL_FAMILIES]
    rng = random.Random(seed)
    return [MINI_FAMILIES[names[i % len(names)]](rng) for i in range(count)]
