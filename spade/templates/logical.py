# ruff: noqa: E501  (the templates hold generated code lines, which may be long)
"""Logical Deduction families: code breaking, ordering from clues, a number pinned by clues."""

from __future__ import annotations

import random

from spade.templates._kit import Rendered, Spec, Style, assemble, compact_rendered, pick, scale

SKILL = "Logical Deduction"

PEOPLE = ["Ann", "Ben", "Cara", "Dov", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jude", "Kim", "Lea"]
COLOURS = ["red", "blue", "green", "gold", "grey", "pink", "teal", "plum", "navy", "lime"]
ANIMALS = ["cat", "dog", "owl", "fox", "yak", "emu", "eel", "ant", "bee", "elk", "ram", "hen"]


def code_breaker(rng: random.Random) -> Rendered:
    """Crack a hidden code from exact-match counts or per-position marks."""
    style = Style.draw(rng)
    feedback = rng.choice(["count", "marks", "both"])
    alphabet = rng.choice(["ABCDEF", "ABCDEFGH", "123456", "XYZUVW", "PQRSTU"])
    lengths = rng.choice([(3, 4, 5), (4, 4, 5), (3, 4, 4), (4, 5, 6)])
    names = {
        "secret": rng.choice(["secret", "code", "key", "combo"]),
        "length": rng.choice(["length", "size", "width", "slots"]),
        "tries": rng.choice(["tries", "guesses", "rounds"]),
        "symbols": rng.choice(["symbols", "alphabet", "letters", "pool"]),
        "alphabet": alphabet,
    }
    budget = tuple(len(alphabet) + 2 + rng.choice([0, 1, 2]) for _ in range(3))
    if feedback == "count":
        score = [
            "hits = sum(g == s for g, s in zip(guess, self.$secret))",
            'note = f"{hits} of {self.$length} symbols are in the right place."',
        ]
    elif feedback == "marks":
        score = [
            'marks = "".join("+" if g == s else "." for g, s in zip(guess, self.$secret))',
            'note = f"Marks: {marks} (+ = right symbol in the right place)."',
        ]
    else:
        score = [
            "hits = sum(g == s for g, s in zip(guess, self.$secret))",
            "common = sum(min(guess.count(c), self.$secret.count(c)) for c in self.$symbols)",
            'note = f"exact {hits}, misplaced {common - hits}."',
        ]
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$secret = "".join(rng.choice(self.$symbols) for _ in range(self.$length))
    self.$turn = 0
    @start
    obs = (
        f"Guess a secret code of {self.$length} symbols from {self.$symbols} (repeats allowed). "
        f"You have {self.$tries} guesses. Example: \\boxed{{{self.$symbols[:self.$length]}}}."
    )
    return obs, $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    guess = text.upper().replace(" ", "")
    if len(guess) != self.$length or any(c not in self.$symbols for c in guess):
        return f"Use exactly {self.$length} symbols from {self.$symbols}.", $bad, False, False, $info
    self.$turn += 1
    if guess == self.$secret:
        @end
        return "Cracked it!", 1.0, True, False, $info
    @score
    if self.$turn >= self.$tries:
        @end
        return f"{note} No guesses left; the code was {self.$secret}.", 0.0, True, False, $info
    return note, 0.0, False, False, $info
"""
    if feedback == "marks" and rng.random() < 0.6:
        solution = r"""
def solution(self):
    known = ["?"] * self.$length
    moves = []
    for c in self.$symbols:
        if "?" not in known:
            break
        moves.append(f"\\boxed{{{c * self.$length}}}")
        for i, s in enumerate(self.$secret):
            if s == c:
                known[i] = c
    final = "".join(known)
    if not moves or moves[-1] != f"\\boxed{{{final}}}":
        moves.append(f"\\boxed{{{final}}}")
    return moves
"""
    else:
        solution = r"""
def solution(self):
    return [f"\\boxed{{{self.$secret}}}"]
"""
    spec = Spec(
        skill=SKILL,
        family="code_breaker",
        description=rng.choice(
            [
                "Crack a hidden symbol code from feedback on each guess.",
                "Mastermind-style code breaking with limited guesses.",
                "Deduce a secret combination from match feedback.",
            ]
        ),
        hint=rng.choice(
            [
                "Test one symbol in every slot first; the feedback tells you where it belongs.",
                "Keep only codes consistent with all feedback so far and guess one of them.",
                "Vary one position at a time and watch how the match count changes.",
            ]
        ),
        class_name=rng.choice(["CodeBreaker", "Mastermind", "CrackCode", "SecretCode", "Combo"])
        + "Env",
        levels=[(names["length"], lengths), (names["tries"], budget)],
        init=['self.$symbols = "$alphabet"'],
        methods=[reset, step, solution],
        names=names,
        blocks={"score": score},
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def order_puzzle(rng: random.Random) -> Rendered:
    """Recover a hidden order of items from shuffled adjacency clues."""
    style = Style.draw(rng)
    pool, noun = rng.choice(
        [(PEOPLE, "people"), (COLOURS, "flags"), (ANIMALS, "animals"), (PEOPLE, "runners")]
    )
    items = rng.sample(pool, 8)
    sizes = rng.choice([(4, 5, 6), (4, 6, 8), (5, 6, 7), (3, 5, 7)])
    relation = rng.choice(["before", "after", "left"])
    attempts = rng.choice([1, 2, 3])
    names = {
        "order": rng.choice(["order", "line", "queue", "lineup"]),
        "size": rng.choice(["size", "count", "n"]),
        "tries": rng.choice(["tries", "attempts", "chances"]),
        "clues": rng.choice(["clues", "facts", "statements"]),
        "pool": rng.choice(["NAMES", "ITEMS", "POOL"]),
        "items": repr(items),
        "noun": noun,
    }
    clue = {
        "before": 'f"{a} is directly before {b}."',
        "after": 'f"{b} comes right after {a}."',
        "left": 'f"{a} stands immediately left of {b}."',
    }[relation]
    names["clue"] = clue
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$order = rng.sample($pool, self.$size)
    pairs = list(zip(self.$order, self.$order[1:]))
    rng.shuffle(pairs)
    self.$clues = [$clue for a, b in pairs]
    self.$turn = 0
    @start
    obs = (
        f"{self.$size} $noun stand in a row. Clues:\n" + "\n".join(self.$clues)
        + "\nGive the full order from first to last, e.g. \\boxed{A, B, C}."
    )
    return obs, $info
"""
    feedback = rng.choice(
        [
            r'f"Not quite: {right} of {self.$size} positions are correct."',
            r'"That order breaks at least one clue."',
        ]
    )
    step = r"""
def step(self, action):
    @guard
    @parse
    guess = [w.capitalize() for w in re.findall(r"[A-Za-z]+", text)]
    self.$turn += 1
    want = [w.capitalize() for w in self.$order]
    if guess == want:
        @end
        return "Correct order!", 1.0, True, False, $info
    right = sum(g == w for g, w in zip(guess, want))
    if self.$turn >= self.$tries:
        @end
        return f"Wrong. The order was {', '.join(self.$order)}.", 0.0, True, False, $info
    return $feedback, 0.0, False, False, $info
"""
    names["feedback"] = feedback
    solution = rng.choice(
        [
            r"""
def solution(self):
    return ["\\boxed{" + ", ".join(self.$order) + "}"]
""",
            r"""
def solution(self):
    nxt = {a: b for a, b in zip(self.$order, self.$order[1:])}
    first = [x for x in self.$order if x not in nxt.values()][0]
    chain = [first]
    while chain[-1] in nxt:
        chain.append(nxt[chain[-1]])
    return ["\\boxed{" + ", ".join(chain) + "}"]
""",
        ]
    )
    spec = Spec(
        skill=SKILL,
        family="order_puzzle",
        description=rng.choice(
            [
                f"Reconstruct the order of {noun} in a row from adjacency clues.",
                "Chain pairwise clues into one complete ordering.",
            ]
        ),
        hint=rng.choice(
            [
                "The first item is the one that never appears second in a clue; follow the chain.",
                "Link the pairs like dominoes: find the start, then keep following the clues.",
            ]
        ),
        class_name=rng.choice(["LineUp", "OrderClues", "RowPuzzle", "ChainOrder", "Queue"]) + "Env",
        levels=[(names["size"], sizes)],
        init=[f"self.$tries = {attempts}"],
        module=["$pool = $items"],
        methods=[reset, step, solution],
        names=names,
        turns="single" if attempts == 1 else "multi",
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def clue_number(rng: random.Random) -> Rendered:
    """Name the only number in a range that satisfies a generated list of true clues."""
    style = Style.draw(rng)
    ranges = rng.choice([(99, 199, 499), (60, 150, 400), (80, 240, 720)])
    table = {
        "div": '("It is divisible by {}.", lambda x, k: x % k == 0, 2, 9),',
        "ndiv": '("It is not a multiple of {}.", lambda x, k: x % k != 0, 2, 9),',
        "last": '("Its last digit is {}.", lambda x, k: x % 10 == k, 0, 9),',
        "odd": '("It leaves remainder {} when divided by 2.", lambda x, k: x % 2 == k, 0, 1),',
        "sum": '("Its digits add up to {}.", lambda x, k: sum(map(int, str(x))) == k, 2, 24),',
        "mod3": '("It leaves remainder {} when divided by 3.", lambda x, k: x % 3 == k, 0, 2),',
    }
    kinds = rng.sample(sorted(table), rng.choice([1, 2, 3]))
    bounds = [
        '("It is greater than {}.", lambda x, k: x > k, 10, $hi),',
        '("It is less than {}.", lambda x, k: x < k, 10, $hi),',
    ]
    rows = [table[k] for k in kinds] + bounds
    rng.shuffle(rows)
    names = {
        "secret": rng.choice(["secret", "number", "answer", "target"]),
        "top": rng.choice(["top", "limit", "upper", "biggest"]),
        "clues": rng.choice(["clues", "facts", "given"]),
        "table": rng.choice(["CLUES", "RULES", "FACTS", "TESTS"]),
        "tries": rng.choice(["tries", "attempts"]),
        "hi": str(ranges[2] + 1),
    }
    module = "$table = [\n" + "\n".join("    " + r for r in rows) + "\n]"
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$secret = rng.randint(10, self.$top)
    self.$clues = []
    alive = list(range(10, self.$top + 1))
    while len(alive) > 1:
        i = rng.randrange(len($table))
        k = rng.randint($table[i][2], $table[i][3])
        test = $table[i][1]
        if test(self.$secret, k) and any(not test(x, k) for x in alive):
            self.$clues.append((i, k))
            alive = [x for x in alive if test(x, k)]
    self.$turn = 0
    @start
    lines = "\n".join($table[i][0].format(k) for i, k in self.$clues)
    return f"I think of a number from 10 to {self.$top}.\n{lines}\nWhich is it? Answer \\boxed{{n}}.", $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    if not text.isdigit():
        return "Answer with a number.", $bad, False, False, $info
    if int(text) == self.$secret:
        @end
        return "Right!", 1.0, True, False, $info
    bad = [$table[i][0].format(k) for i, k in self.$clues if not $table[i][1](int(text), k)]
    self.$done = self.$turn >= self.$tries
    msg = f"No, {text} breaks: {bad[0]}" if bad else f"No, {text} fits but is not it."
    return msg, 0.0, self.$done, False, $info
"""
    solution = rng.choice(
        [
            r"""
def solution(self):
    for x in range(10, self.$top + 1):
        if all($table[i][1](x, k) for i, k in self.$clues):
            return [f"\\boxed{{{x}}}"]
    return []
""",
            r"""
def solution(self):
    return [f"\\boxed{{{self.$secret}}}"]
""",
        ]
    )
    spec = Spec(
        skill=SKILL,
        family="clue_number",
        description=rng.choice(
            [
                "Pin down a hidden number from true statements about it.",
                "Deduce the unique number consistent with all clues.",
            ]
        ),
        hint=rng.choice(
            [
                "Apply the bounds first, then filter the survivors with each other clue.",
                "List the numbers within the bounds and strike out each one that breaks a clue.",
            ]
        ),
        class_name=rng.choice(["ClueNumber", "NumberRiddle", "WhichNumber", "Deduce", "Riddle"])
        + "Env",
        levels=[(names["top"], ranges)],
        init=[f"self.$tries = {rng.choice([1, 2, 3])}"],
        module=[module],
        methods=[reset, step, solution],
        names=names,
        turns="single",
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


FAMILIES = {"code_breaker": code_breaker, "order_puzzle": order_puzzle, "clue_number": clue_number}


# --- compact form -----------------------------------------------------------------------------


def compact_code_breaker(rng: random.Random) -> Rendered:
    """GameEnv: crack a hidden code from exact-match counts or per-position marks."""
    n = pick(
        rng,
        secret=["secret", "code", "key", "combo"],
        size=["size", "length", "slots", "width"],
        tries=["tries", "guesses", "rounds"],
        symbols=["symbols", "alphabet", "letters", "pool"],
        guess=["guess", "attempt", "word"],
    )
    alphabet = rng.choice(["ABCDEF", "ABCDEFGH", "123456", "XYZUVW", "PQRSTU"])
    n["alphabet"] = f'"{alphabet}"'
    n["lengths"] = scale(rng, rng.choice([(3, 4, 5), (4, 4, 5), (3, 4, 4), (4, 5, 6)]))
    budget = len(alphabet) + 1 + rng.choice([1, 2, 3])
    n["budget"] = rng.choice([str(budget), f"len(self.$symbols) + {budget - len(alphabet)}"])
    feedback = rng.choice(["count", "marks", "both"])
    score = {
        "count": [
            "hits = sum(a == b for a, b in zip($guess, self.$secret))",
            'note = f"{hits} of {self.$size} symbols are in the right place."',
        ],
        "marks": [
            'note = "".join("+" if a == b else "." for a, b in zip($guess, self.$secret))',
        ],
        "both": [
            "hits = sum(a == b for a, b in zip($guess, self.$secret))",
            "common = sum(min($guess.count(c), self.$secret.count(c)) for c in self.$symbols)",
            'note = f"Exact: {hits}, misplaced: {common - hits}."',
        ],
    }[feedback]
    setup = [
        "self.$symbols = $alphabet",
        "self.$size = $lengths",
        "self.$tries = $budget",
        'self.$secret = "".join(rng.choice(self.$symbols) for _ in range(self.$size))',
    ]
    if rng.random() < 0.5:
        setup[1], setup[2] = setup[2], setup[1]
    n["intro"] = rng.choice(
        [
            'f"Guess a code of {self.$size} symbols from {self.$symbols} in {self.$tries} tries."',
            'f"Crack a {self.$size}-character code over {self.$symbols}. Guesses: {self.$tries}."',
        ]
        + (
            [
                'f"Find the {self.$size}-symbol code over {self.$symbols}; + marks a right '
                'symbol in the right place. Guesses: {self.$tries}."'
            ]
            if feedback == "marks"
            else []
        )
    )
    start = """
        def start(self, rng):
            @setup
            return $intro
        """
    normalise = rng.choice(['action.upper().replace(" ", "")', 'action.replace(" ", "").upper()'])
    move = rng.choice(
        [
            f"""
            def move(self, action):
                $guess = {normalise}
                if len($guess) != self.$size:
                    return f"Use exactly {{self.$size}} symbols.", 0.0, False
                if $guess == self.$secret:
                    return "Cracked it!", 1.0, True
                @score
                if self.turn >= self.$tries:
                    return f"{{note}} No guesses left; the code was {{self.$secret}}.", 0.0, True
                return note, 0.0, False
            """,
            f"""
            def move(self, action):
                $guess = {normalise}
                if len($guess) != self.$size:
                    raise ValueError(f"the code has {{self.$size}} symbols")
                @score
                if $guess == self.$secret:
                    return "Correct, the code is cracked!", 1.0, True
                over = self.turn >= self.$tries
                return note + (" Out of guesses." if over else ""), 0.0, over
            """,
        ]
    )
    if feedback == "marks" and budget >= len(alphabet) + 1 and rng.random() < 0.6:
        solve = """
            def solve(self):
                known = list(self.$secret)
                moves = [c * self.$size for c in self.$symbols if c in known]
                return moves + [self.$secret]
            """
    else:
        solve = """
            def solve(self):
                return [self.$secret]
            """
    return compact_rendered(
        rng,
        skill=SKILL,
        family="code_breaker",
        base="GameEnv",
        class_names=[
            "CodeBreakerEnv",
            "MastermindEnv",
            "CrackCodeEnv",
            "SecretCodeEnv",
            "ComboEnv",
        ],
        descriptions=[
            "Crack a hidden symbol code from feedback on each guess.",
            "Mastermind-style code breaking with limited guesses.",
            "Deduce a secret combination from match feedback.",
        ],
        hints=[
            "Test one symbol in every slot first; the feedback tells you where it belongs.",
            "Keep only codes consistent with all feedback so far and guess one of them.",
            "Vary one position at a time and watch how the feedback changes.",
        ],
        parts=[start, move, solve],
        names=n,
        blocks={"setup": setup, "score": score},
    )


def compact_order_puzzle(rng: random.Random) -> Rendered:
    """QuestionEnv: recover a hidden order of items from shuffled adjacency clues."""
    n = pick(
        rng,
        order=["order", "line", "queue", "lineup"],
        pairs=["pairs", "links", "neighbours"],
        clues=["clues", "facts", "lines"],
        pool=["names", "items", "pool", "cast"],
        w=["w", "name", "item"],
    )
    n["a"], n["b"] = rng.choice([("a", "b"), ("x", "y"), ("left", "right"), ("first", "then")])
    n["mix"] = rng.choice(["rng.shuffle($pairs)", "$pairs = rng.sample($pairs, len($pairs))"])
    group, noun = rng.choice(
        [(PEOPLE, "people"), (COLOURS, "flags"), (ANIMALS, "animals"), (PEOPLE, "runners")]
    )
    n["noun"] = noun
    n["list"] = repr(rng.sample(group, 8)).replace("'", '"')
    n["size"] = scale(rng, rng.choice([(4, 5, 6), (4, 6, 8), (5, 6, 7), (3, 5, 7)]))
    n["clue"] = rng.choice(
        [
            'f"{$a} is directly before {$b}."',
            'f"{$b} comes right after {$a}."',
            'f"{$a} stands immediately left of {$b}."',
        ]
    )
    n["ask"] = rng.choice(
        [
            'f"{len(self.$order)} $noun stand in a row. {$clues} '
            'Give the order from first to last as \\\\boxed{{A, B, C}}."',
            'f"Clues about a row of $noun: {$clues} '
            'List all {len(self.$order)} from first to last, like \\\\boxed{{A, B, C}}."',
        ]
    )
    checker = rng.choice(
        [
            """
            def check(self, given):
                return re.findall(r"[a-z]+", given.lower()) == [$w.lower() for $w in self.$order]
            """,
            """
            def check(self, given):
                words = [$w.strip().lower() for $w in given.split(",")]
                return words == [$w.lower() for $w in self.$order]
            """,
            """
            def check(self, given):
                return given.replace(" ", "").lower() == ",".join(self.$order).lower()
            """,
        ]
    )
    generate = rng.choice(
        [
            """
            def generate(self, rng):
                $pool = $list
                self.$order = rng.sample($pool, $size)
                $pairs = list(zip(self.$order, self.$order[1:]))
                $mix
                $clues = " ".join($clue for $a, $b in $pairs)
                return $ask, ", ".join(self.$order)
            """,
            """
            def generate(self, rng):
                self.$order = rng.sample($list, $size)
                $pairs = [(self.$order[i], self.$order[i + 1]) for i in range(len(self.$order) - 1)]
                $mix
                $clues = []
                for $a, $b in $pairs:
                    $clues.append($clue)
                $clues = " ".join($clues)
                return $ask, ", ".join(self.$order)
            """,
        ]
    )
    attempts = rng.choice([1, 1, 2])
    return compact_rendered(
        rng,
        skill=SKILL,
        family="order_puzzle",
        base="QuestionEnv",
        class_names=["LineUpEnv", "OrderCluesEnv", "RowPuzzleEnv", "ChainOrderEnv", "QueueEnv"],
        descriptions=[
            f"Reconstruct the order of {noun} in a row from adjacency clues.",
            "Chain pairwise clues into one complete ordering.",
        ],
        hints=[
            "The first item is the one that never appears second in a clue; follow the chain.",
            "Link the pairs like dominoes: find the start, then keep following the clues.",
        ],
        parts=[f"attempts = {attempts}" if attempts > 1 else "", generate, checker],
        names=n,
    )


def compact_clue_number(rng: random.Random) -> Rendered:
    """QuestionEnv: name the only number in a range that satisfies generated true clues."""
    n = pick(
        rng,
        secret=["secret", "number", "target", "hidden"],
        top=["top", "limit", "upper", "biggest"],
        alive=["alive", "left", "candidates", "pool"],
        kept=["kept", "rest", "fits", "remaining"],
        clues=["clues", "facts", "given"],
        clue=["clue", "fact", "line"],
    )
    n["tops"] = scale(
        rng, rng.choice([(99, 199, 299), (60, 150, 400), (80, 240, 480), (100, 200, 300)])
    )
    n["kmax"] = str(rng.choice([9, 10, 12]))
    mod_text = rng.choice(
        [
            'f"It leaves remainder {self.$secret % k} when divided by {k}."',
            'f"Divided by {k}, it leaves {self.$secret % k}."',
        ]
    )
    n["mod_text"] = mod_text
    extra = rng.choice(["none", "above", "below"])
    blocks: dict[str, list[str]] = {}
    if extra == "none":
        blocks["filter"] = [
            "k = rng.randint(2, $kmax)",
            "$kept = [x for x in $alive if x % k == self.$secret % k]",
            "$clue = $mod_text",
        ]
    else:
        bound = (
            [
                "low = rng.randint(1, self.$secret - 1)",
                "$kept = [x for x in $alive if x > low]",
                '$clue = f"It is greater than {low}."',
            ]
            if extra == "above"
            else [
                "high = rng.randint(self.$secret + 1, $top + 20)",
                "$kept = [x for x in $alive if x < high]",
                '$clue = f"It is less than {high}."',
            ]
        )
        blocks["filter"] = [
            "k = rng.randint(2, $kmax)",
            f"if rng.random() < {rng.choice([0.2, 0.3, 0.4])}:",
            *("    " + line for line in bound),
            "else:",
            "    $kept = [x for x in $alive if x % k == self.$secret % k]",
            "    $clue = $mod_text",
        ]
    n["ask"] = rng.choice(
        [
            'f"I think of a number from 1 to {$top}. " + " ".join($clues) + " Which number is it?"',
            'f"A whole number between 1 and {$top} fits all of these: " + " ".join($clues) + " Name it."',
        ]
    )
    generate = """
        def generate(self, rng):
            $top = $tops
            self.$secret = rng.randint(21, $top)
            $alive = list(range(1, $top + 1))
            $clues = []
            while len($alive) > 1:
                @filter
                if len($kept) < len($alive):
                    $clues.append($clue)
                    $alive = $kept
            return $ask, self.$secret
        """
    attempts = rng.choice([1, 1, 2])
    return compact_rendered(
        rng,
        skill=SKILL,
        family="clue_number",
        base="QuestionEnv",
        class_names=[
            "ClueNumberEnv",
            "NumberRiddleEnv",
            "WhichNumberEnv",
            "DeduceEnv",
            "RiddleEnv",
        ],
        descriptions=[
            "Pin down a hidden number from true statements about it.",
            "Deduce the unique number consistent with all clues.",
        ],
        hints=[
            "Apply the bounds first, then filter the survivors with each other clue.",
            "List the numbers in range and strike out each one that breaks a clue.",
            "Combine the remainder clues one at a time: each keeps only every k-th number.",
        ],
        parts=[f"attempts = {attempts}" if attempts > 1 else "", generate],
        names=n,
        blocks=blocks,
    )


COMPACT_FAMILIES = {
    "code_breaker": compact_code_breaker,
    "order_puzzle": compact_order_puzzle,
    "clue_number": compact_clue_number,
}
