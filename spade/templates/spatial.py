# ruff: noqa: E501  (the templates hold generated code lines, which may be long)
"""Spatial Reasoning families: walking to a goal on a grid, transforming a point, tracing a path."""

from __future__ import annotations

import random

from spade.templates._kit import Rendered, Spec, Style, assemble, compact_rendered, pick, scale

SKILL = "Spatial Reasoning"

MOVE_WORDS = [
    ("up", "down", "left", "right"),
    ("north", "south", "west", "east"),
    ("n", "s", "w", "e"),
    ("u", "d", "l", "r"),
]


def grid_walk(rng: random.Random) -> Rendered:
    """Walk to a goal on a grid (optionally around walls) within a move budget."""
    style = Style.draw(rng)
    up, down, left, right = rng.choice(MOVE_WORDS)
    walls = rng.random() < 0.5
    sizes = rng.choice([(5, 7, 9), (6, 8, 10), (5, 6, 8), (7, 9, 11)])
    slack = rng.choice([0, 1, 2, 3])
    names = {
        "size": rng.choice(["size", "side", "n", "width"]),
        "pos": rng.choice(["pos", "player", "here", "me"]),
        "goal": rng.choice(["goal", "exit", "flag", "home"]),
        "walls": rng.choice(["walls", "blocked", "rocks"]),
        "budget": rng.choice(["budget", "moves_left", "fuel", "energy"]),
        "path": rng.choice(["path", "route", "plan"]),
        "up": up,
        "down": down,
        "left": left,
        "right": right,
        "slack": str(slack),
        "density": rng.choice(["0.15", "0.2", "0.25"]),
    }
    if walls:
        build = [
            "while True:",
            "    cells = [(r, c) for r in range(self.$size) for c in range(self.$size)]",
            "    self.$pos, self.$goal = rng.sample(cells, 2)",
            "    self.$walls = [x for x in cells if rng.random() < $density and x not in (self.$pos, self.$goal)]",
            "    self.$path = self._route()",
            "    if self.$path is not None and len(self.$path) >= 4:",
            "        break",
        ]
        route = r"""
def _route(self):
    steps = {"$up": (-1, 0), "$down": (1, 0), "$left": (0, -1), "$right": (0, 1)}
    seen = {self.$pos: []}
    queue = [self.$pos]
    while queue:
        cur = queue.pop(0)
        if cur == self.$goal:
            return seen[cur]
        for word, (dr, dc) in steps.items():
            nxt = (cur[0] + dr, cur[1] + dc)
            if 0 <= nxt[0] < self.$size and 0 <= nxt[1] < self.$size and nxt not in self.$walls and nxt not in seen:
                seen[nxt] = seen[cur] + [word]
                queue.append(nxt)
    return None
"""
    else:
        build = [
            "while True:",
            "    self.$pos = (rng.randrange(self.$size), rng.randrange(self.$size))",
            "    self.$goal = (rng.randrange(self.$size), rng.randrange(self.$size))",
            "    if abs(self.$pos[0] - self.$goal[0]) + abs(self.$pos[1] - self.$goal[1]) >= 4:",
            "        break",
            "self.$walls = []",
            "self.$path = self._route()",
        ]
        route = r"""
def _route(self):
    (r, c), (gr, gc) = self.$pos, self.$goal
    vertical = ["$down"] * (gr - r) if gr > r else ["$up"] * (r - gr)
    horizontal = ["$right"] * (gc - c) if gc > c else ["$left"] * (c - gc)
    return vertical + horizontal
"""
    walls_text = " Walls: {self.$walls}." if walls else ""
    show = (
        "def _view(self):\n"
        '    return f"You are at {self.$pos}, the goal is at {self.$goal} (row, column).'
        + walls_text
        + ' Moves left: {self.$budget}."'
    )
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    @build
    self.$budget = len(self.$path) + $slack
    self.$turn = 0
    @start
    intro = f"Reach the goal on a {self.$size}x{self.$size} grid with \\boxed{{$up}}, \\boxed{{$down}}, \\boxed{{$left}} or \\boxed{{$right}}. "
    return intro + self._view(), $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    move = text.lower()
    deltas = {"$up": (-1, 0), "$down": (1, 0), "$left": (0, -1), "$right": (0, 1)}
    self.$turn += 1
    self.$budget -= 1
    if move in deltas:
        r, c = self.$pos[0] + deltas[move][0], self.$pos[1] + deltas[move][1]
        if 0 <= r < self.$size and 0 <= c < self.$size and (r, c) not in self.$walls:
            self.$pos = (r, c)
    if self.$pos == self.$goal:
        @end
        return "You reached the goal!", 1.0, True, False, $info
    if self.$budget <= 0:
        @end
        return "Out of moves.", 0.0, True, False, $info
    return self._view(), 0.0 if move in deltas else $bad, False, False, $info
"""
    solution = r"""
def solution(self):
    return [f"\\boxed{{{w}}}" for w in self.$path]
"""
    spec = Spec(
        skill=SKILL,
        family="grid_walk",
        description=rng.choice(
            [
                "Walk to a goal cell on a grid before the moves run out.",
                "Navigate a small grid" + (" around walls" if walls else "") + " to the exit.",
            ]
        ),
        hint=rng.choice(
            [
                "Compare your row and column with the goal's and only make moves that close the gap.",
                "Plan the shortest route first"
                + (", going around walls" if walls else "")
                + "; every wasted move costs budget.",
            ]
        ),
        class_name=rng.choice(["GridWalk", "MazeRun", "FindExit", "Rover", "Navigate"]) + "Env",
        levels=[(names["size"], sizes)],
        methods=[reset, step, solution],
        helpers=[route, show],
        names=names,
        blocks={"build": build},
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def point_transform(rng: random.Random) -> Rendered:
    """Apply a list of rotations, reflections and shifts to a point; name where it lands."""
    style = Style.draw(rng)
    counts = rng.choice([(1, 2, 3), (2, 3, 4), (1, 3, 5), (2, 4, 6)])
    ops = rng.sample(["rot90", "rot180", "flipx", "flipy", "shift", "swap"], rng.choice([3, 4]))
    if "shift" not in ops:
        ops.append("shift")
    names = {
        "point": rng.choice(["point", "start", "origin_pt", "p"]),
        "end_pt": rng.choice(["answer", "final", "end", "target"]),
        "ops": rng.choice(["ops", "moves", "transforms", "steps_list"]),
        "count": rng.choice(["count", "n_ops", "length"]),
        "apply": rng.choice(["_apply", "_move", "_transform"]),
        "tries": rng.choice(["tries", "attempts"]),
    }
    code = {
        "rot90": ('"rotate 90 clockwise"', "x, y = y, -x"),
        "rot180": ('"rotate 180"', "x, y = -x, -y"),
        "flipx": ('"mirror in the x-axis"', "y = -y"),
        "flipy": ('"mirror in the y-axis"', "x = -x"),
        "swap": ('"swap x and y"', "x, y = y, x"),
    }
    apply_lines = []
    for i, op in enumerate(o for o in ops if o != "shift"):
        apply_lines.append(f"{'if' if i == 0 else 'elif'} op == {code[op][0]}:")
        apply_lines.append(f"    {code[op][1]}")
    apply_lines += [
        "else:",
        '    dx, dy = map(int, re.findall(r"-?\\d+", op))',
        "    x, y = x + dx, y + dy",
    ]
    choices = [code[o][0] for o in ops if o != "shift"]
    apply = (
        "def $apply(self, op, x, y):\n"
        + "\n".join("    " + line for line in apply_lines)
        + "\n    return x, y"
    )
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    kinds = [$choices]
    while True:
        self.$point = (rng.randint(-9, 9), rng.randint(-9, 9))
        self.$ops = []
        for _ in range(self.$count):
            if rng.random() < 0.35:
                self.$ops.append(f"shift by ({rng.randint(-5, 5)}, {rng.randint(-5, 5)})")
            else:
                self.$ops.append(rng.choice(kinds))
        x, y = self.$point
        for op in self.$ops:
            x, y = self.$apply(op, x, y)
        if abs(x) + abs(y) >= 4:
            break
    self.$end_pt = [x, y]
    self.$turn = 0
    @start
    steps = "\n".join(f"{i + 1}. {op}" for i, op in enumerate(self.$ops))
    return f"Start at {self.$point}. Apply in order:\n{steps}\nWhere does it end? Answer \\boxed{{x, y}}.", $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    nums = [int(v) for v in re.findall(r"-?\d+", text)]
    if nums == self.$end_pt:
        @end
        return "Correct position!", 1.0, True, False, $info
    if len(nums) != 2:
        return "Give two integers: \\boxed{x, y}.", $bad, False, False, $info
    self.$done = self.$turn >= self.$tries
    return f"({nums[0]}, {nums[1]}) is not where it ends.", 0.0, self.$done, False, $info
"""
    solution = r"""
def solution(self):
    x, y = self.$end_pt
    return [f"\\boxed{{{x}, {y}}}"]
"""
    names["choices"] = ", ".join(choices)
    spec = Spec(
        skill=SKILL,
        family="point_transform",
        description=rng.choice(
            [
                "Track a point through rotations, reflections and shifts.",
                "Compose plane transformations and report the final coordinates.",
            ]
        ),
        hint=rng.choice(
            [
                "Rotating 90 degrees clockwise sends (x, y) to (y, -x); apply the steps one by one.",
                "Write the coordinates down after every step instead of composing in your head.",
            ]
        ),
        class_name=rng.choice(["PointTransform", "PlaneMoves", "Transformer", "Geometry", "Plot"])
        + "Env",
        levels=[(names["count"], counts)],
        init=[f"self.$tries = {rng.choice([1, 2])}"],
        methods=[reset, step, solution],
        helpers=[apply],
        names=names,
        turns="single",
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def path_trace(rng: random.Random) -> Rendered:
    """Follow a list of moves on a bounded or wrapping board; report the final cell."""
    style = Style.draw(rng)
    edge = rng.choice(["clamp", "wrap"])
    up, down, left, right = rng.choice(MOVE_WORDS[:2])
    names = {
        "rows": rng.choice(["rows", "height", "h"]),
        "cols": rng.choice(["cols", "width", "w"]),
        "start": rng.choice(["start", "origin", "begin"]),
        "moves": rng.choice(["moves_list", "route", "program", "commands"]),
        "length": rng.choice(["length", "n_moves", "count"]),
        "walk": rng.choice(["_walk", "_follow", "_end_cell"]),
        "tries": rng.choice(["tries", "attempts"]),
        "up": up,
        "down": down,
        "left": left,
        "right": right,
    }
    lengths = rng.choice([(6, 10, 16), (5, 9, 14), (8, 12, 20)])
    board = rng.choice([(8, 8), (9, 7), (10, 10), (7, 12)])
    if edge == "clamp":
        move = [
            "r = min(max(r + dr, 0), self.$rows - 1)",
            "c = min(max(c + dc, 0), self.$cols - 1)",
        ]
        rule = "Moves that would leave the board are ignored (you stay at the edge)."
    else:
        move = ["r = (r + dr) % self.$rows", "c = (c + dc) % self.$cols"]
        rule = "The board wraps around: leaving one side brings you back on the opposite side."
    names["rule"] = rule
    walk = r"""
def $walk(self):
    deltas = {"$up": (-1, 0), "$down": (1, 0), "$left": (0, -1), "$right": (0, 1)}
    r, c = self.$start
    for m in self.$moves:
        dr, dc = deltas[m]
        @move
    return r, c
"""
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    while True:
        self.$start = (rng.randrange(self.$rows), rng.randrange(self.$cols))
        self.$moves = [rng.choice(["$up", "$down", "$left", "$right"]) for _ in range(self.$length)]
        if max(self.$walk()) >= 3:
            break
    self.$turn = 0
    @start
    obs = (
        f"A token starts at row {self.$start[0]}, column {self.$start[1]} of a "
        f"{self.$rows}x{self.$cols} board (rows and columns count from 0). $rule\n"
        f"Moves: {' '.join(self.$moves)}\nWhere does it end? Answer \\boxed{{row, column}}."
    )
    return obs, $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    nums = [int(v) for v in re.findall(r"-?\d+", text)]
    if len(nums) != 2:
        return "Answer with two numbers, e.g. \\boxed{3, 4}.", $bad, False, False, $info
    if tuple(nums) == self.$walk():
        @end
        return "Correct!", 1.0, True, False, $info
    self.$done = self.$turn >= self.$tries
    return "Wrong cell.", 0.0, self.$done, False, $info
"""
    solution = r"""
def solution(self):
    r, c = self.$walk()
    return [f"\\boxed{{{r}, {c}}}"]
"""
    spec = Spec(
        skill=SKILL,
        family="path_trace",
        description=rng.choice(
            [
                "Trace a token through a list of moves on a "
                + ("bounded" if edge == "clamp" else "wrapping")
                + " board.",
                "Mentally execute grid moves and report the final cell.",
            ]
        ),
        hint=rng.choice(
            [
                "Net the vertical and horizontal moves separately"
                + (", but remember the edges stop you." if edge == "clamp" else ", then wrap."),
                "Follow the moves one at a time and keep the row and column written down.",
            ]
        ),
        class_name=rng.choice(["PathTrace", "TokenWalk", "BoardMoves", "Tracker", "Robot"]) + "Env",
        levels=[(names["length"], lengths)],
        init=[
            f"self.$rows, self.$cols = {board[0]}, {board[1]}",
            f"self.$tries = {rng.choice([1, 2])}",
        ],
        methods=[reset, step, solution],
        helpers=[walk],
        names=names,
        blocks={"move": move},
        turns="single",
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


FAMILIES = {"grid_walk": grid_walk, "point_transform": point_transform, "path_trace": path_trace}


# --- compact form -----------------------------------------------------------------------------


def compact_grid_walk(rng: random.Random) -> Rendered:
    """GameEnv: walk to a goal on a grid within a move budget."""
    n = pick(
        rng,
        size=["size", "side", "n", "width"],
        pos=["pos", "here", "me", "cur"],
        goal=["goal", "exit", "flag", "home"],
        budget=["budget", "fuel", "energy", "moves"],
        steps=["steps", "deltas", "dirs", "compass"],
    )
    up, down, left, right = rng.choice(MOVE_WORDS)
    n.update(up=up, down=down, left=left, right=right)
    n["sizes"] = scale(rng, rng.choice([(5, 7, 9), (6, 8, 10), (5, 6, 8), (6, 7, 8)]))
    n["slack"] = str(rng.choice([0, 1, 2, 3]))
    corner = rng.random() < 0.5
    if corner:
        place = [
            "self.$pos = (0, 0)",
            "self.$goal = (rng.randint(2, self.$size - 1), rng.randint(2, self.$size - 1))",
            "self.$budget = self.$goal[0] + self.$goal[1] + $slack",
        ]
    else:
        place = [
            "self.$pos = (rng.randint(0, 1), rng.randint(0, self.$size - 1))",
            "self.$goal = (rng.randint(4, self.$size - 1), rng.randint(0, self.$size - 1))",
            "self.$budget = sum(abs(a - b) for a, b in zip(self.$pos, self.$goal)) + $slack",
        ]
    n["table"] = '{"$up": (-1, 0), "$down": (1, 0), "$left": (0, -1), "$right": (0, 1)}'
    n["view"] = rng.choice(
        [
            'f"You are at {self.$pos}."',
            'f"At {self.$pos}, goal {self.$goal}."',
            'f"Now at {self.$pos}."',
        ]
    )
    n["intro"] = rng.choice(
        [
            'f"Go from {self.$pos} to {self.$goal} in {self.$budget} moves: $up/$down/$left/$right."',
            'f"You {self.$pos}, goal {self.$goal}, grid {self.$size}, {self.$budget} moves."',
        ]
    )
    start = """
        def start(self, rng):
            self.$size = $sizes
            @place
            return $intro
        """
    as_attribute = rng.random() < 0.5
    lookup = "self.$steps[action.lower()]" if as_attribute else "$table[action.lower()]"
    bounds = rng.choice(
        [
            ["if 0 <= r < self.$size and 0 <= c < self.$size:", "    self.$pos = (r, c)"],
            ["self.$pos = (min(max(r, 0), self.$size - 1), min(max(c, 0), self.$size - 1))"],
            ["if min(r, c) >= 0 and max(r, c) < self.$size:", "    self.$pos = (r, c)"],
        ]
    )
    move = rng.choice(
        [
            f"""
            def move(self, action):
                dr, dc = {lookup}
                r, c = self.$pos[0] + dr, self.$pos[1] + dc
                @bounds
                if self.$pos == self.$goal:
                    return "Goal!", 1.0, True
                if self.turn >= self.$budget:
                    return "Out of moves.", 0.0, True
                return $view, 0.0, False
            """,
            f"""
            def move(self, action):
                dr, dc = {lookup}
                r, c = self.$pos[0] + dr, self.$pos[1] + dc
                @bounds
                won = self.$pos == self.$goal
                if won or self.turn >= self.$budget:
                    return ("Goal!" if won else "No moves left."), float(won), True
                return $view, 0.0, False
            """,
        ]
    )
    solve = rng.choice(
        [
            """
            def solve(self):
                return ["$down"] * self.$goal[0] + ["$right"] * self.$goal[1]
            """
        ]
        if corner
        else [
            """
            def solve(self):
                (r, c), (gr, gc) = self.$pos, self.$goal
                return ["$down"] * (gr - r) + ["$right"] * (gc - c) + ["$left"] * (c - gc)
            """,
            """
            def solve(self):
                dc = self.$goal[1] - self.$pos[1]
                side = ["$right"] * dc if dc > 0 else ["$left"] * -dc
                return ["$down"] * (self.$goal[0] - self.$pos[0]) + side
            """,
        ]
    )
    return compact_rendered(
        rng,
        skill=SKILL,
        family="grid_walk",
        base="GameEnv",
        class_names=["GridWalkEnv", "MazeRunEnv", "FindExitEnv", "RoverEnv", "NavigateEnv"],
        descriptions=[
            "Walk to a goal cell before the moves run out.",
            "Navigate a small grid to the exit.",
        ],
        hints=[
            "Compare your row and column with the goal's and only make moves that close the gap.",
            "Plan the shortest route first; every wasted move costs budget.",
        ],
        parts=["$steps = $table" if as_attribute else "", start, move, solve],
        names=n,
        blocks={"place": place, "bounds": bounds},
    )


def compact_point_transform(rng: random.Random) -> Rendered:
    """QuestionEnv: apply rotations, reflections and shifts to a point; name where it lands."""
    n = pick(
        rng,
        ops=["ops", "steps", "moves", "plan"],
        op=["op", "kind", "step"],
        begin=["begin", "origin", "first", "p0"],
        end=["end", "final", "where", "landing"],
    )
    pool = {
        "rotate": ("rotate 90 degrees clockwise", "x, y = y, -x"),
        "half": ("rotate 180 degrees", "x, y = -x, -y"),
        "mirror": ("mirror in the x-axis", "y = -y"),
        "flip": ("mirror in the y-axis", "x = -x"),
        "swap": ("swap x and y", "x, y = y, x"),
    }
    kinds = rng.sample(sorted(pool), rng.choice([2, 3]))
    shift = rng.random() < 0.5
    chain: list[str] = []
    for i, kind in enumerate(kinds):
        chain += [
            f'{"if" if i == 0 else "elif"} $op == "{kind}":',
            f"    {pool[kind][1]}",
            f'    $ops.append("{pool[kind][0]}")',
        ]
    if shift:
        chain += [
            "else:",
            "    d = rng.randint(1, 5)",
            "    x += d",
            '    $ops.append(f"move {d} to the right")',
        ]
        kinds.append("shift")
    else:
        chain[-3] = "else:"
    n["kinds"] = repr(kinds).replace("'", '"')
    n["count"] = scale(rng, rng.choice([(1, 2, 3), (2, 3, 4), (2, 4, 6), (1, 3, 5)]))
    n["draw"] = rng.choice(
        ["rng.randint(3, 9), rng.randint(-9, -3)", "rng.randint(-9, -3), rng.randint(3, 9)"]
    )
    n["ask"] = rng.choice(
        [
            "f\"Start at {$begin}. Apply in order: {'; '.join($ops)}. Where does the point end? "
            'Answer as \\\\boxed{{x, y}}."',
            "f\"A point at {$begin} is moved by: {'; '.join($ops)}. Give its final "
            'coordinates as \\\\boxed{{x, y}}."',
        ]
    )
    checker = rng.choice(
        [
            """
            def check(self, given):
                return [int(v) for v in re.findall(r"-?\\d+", given)] == self.$end
            """,
            """
            def check(self, given):
                return given.replace(" ", "").strip("()") == f"{self.$end[0]},{self.$end[1]}"
            """,
        ]
    )
    generate = """
        def generate(self, rng):
            x, y = $draw
            $begin = (x, y)
            $ops = []
            for _ in range($count):
                $op = rng.choice($kinds)
                @chain
            self.$end = [x, y]
            return $ask, f"{x}, {y}"
        """
    return compact_rendered(
        rng,
        skill=SKILL,
        family="point_transform",
        base="QuestionEnv",
        class_names=[
            "PointTransformEnv",
            "PlaneMovesEnv",
            "TransformerEnv",
            "GeometryEnv",
            "PlotEnv",
        ],
        descriptions=[
            "Track a point through rotations, reflections and shifts.",
            "Compose plane transformations and report the final coordinates.",
        ],
        hints=[
            "Rotating 90 degrees clockwise sends (x, y) to (y, -x); apply the steps one by one.",
            "Write the coordinates down after every step instead of composing in your head.",
        ],
        parts=[generate, checker],
        names=n,
        blocks={"chain": chain},
    )


def compact_path_trace(rng: random.Random) -> Rendered:
    """QuestionEnv: follow a list of moves on a bounded or wrapping board; report the cell."""
    n = pick(
        rng,
        rows=["rows", "height", "h"],
        cols=["cols", "width", "w"],
        moves=["moves", "route", "commands", "program"],
        m=["m", "d", "cmd"],
        end=["end", "cell", "stop"],
    )
    letters = rng.choice(["UDLR", "NSWE"])
    n["letters"] = f'"{letters}"'
    u, d, lft, rgt = list(letters)
    n["table"] = f'{{"{u}": (-1, 0), "{d}": (1, 0), "{lft}": (0, -1), "{rgt}": (0, 1)}}'
    board = rng.choice([(8, 8), (9, 7), (10, 10), (7, 12), (6, 9)])
    n["board"] = f"{board[0]}, {board[1]}"
    n["length"] = scale(rng, rng.choice([(6, 10, 16), (5, 9, 14), (8, 12, 20), (6, 12, 18)]))
    wrap = rng.random() < 0.5
    step = (
        ["r, c = (r + dr) % $rows, (c + dc) % $cols"]
        if wrap
        else rng.choice(
            [
                ["r = min(max(r + dr, 0), $rows - 1)", "c = min(max(c + dc, 0), $cols - 1)"],
                ["if 0 <= r + dr < $rows and 0 <= c + dc < $cols:", "    r, c = r + dr, c + dc"],
            ]
        )
    )
    n["rule"] = (
        "The board wraps around at the edges."
        if wrap
        else rng.choice(
            ["Moves off the board are ignored.", "A move that would leave the board does nothing."]
        )
    )
    legend = f"{u}=up, {d}=down, {lft}=left, {rgt}=right"
    n["ask"] = rng.choice(
        [
            f'f"A token starts at row {{r0}}, column {{c0}} of a {{$rows}}x{{$cols}} board (counting from 0). '
            f'$rule Moves ({legend}): {{$moves}}. Where does it end? Answer \\\\boxed{{{{row, column}}}}."',
            f'f"On a {{$rows}} by {{$cols}} grid (rows and columns from 0) start at ({{r0}}, {{c0}}) and follow '
            f'{{$moves}} ({legend}). $rule Final cell as \\\\boxed{{{{row, column}}}}?"',
        ]
    )
    walk = rng.choice(
        [
            [
                "for $m in $moves:",
                "    dr, dc = $table[$m]",
                *("    " + line for line in step),
            ],
            [
                "$table_name = $table",
                "for $m in $moves:",
                "    dr, dc = $table_name[$m]",
                *("    " + line for line in step),
            ],
        ]
    )
    n["table_name"] = rng.choice(["delta", "offsets", "shift"])
    draw = rng.choice(
        [
            '$moves = "".join(rng.choice($letters) for _ in range($length))',
            "$moves = ''.join(rng.choices($letters, k=$length))",
        ]
    )
    generate = """
        def generate(self, rng):
            $rows, $cols = $board
            r0, c0 = rng.randrange($rows), rng.randrange($cols)
            @draw
            r, c = r0, c0
            @walk
            self.$end = [r, c]
            return $ask, f"{r}, {c}"
        """
    checker = """
        def check(self, given):
            return [int(v) for v in re.findall(r"-?\\d+", given)] == self.$end
        """
    attempts = rng.choice([1, 1, 2])
    return compact_rendered(
        rng,
        skill=SKILL,
        family="path_trace",
        base="QuestionEnv",
        class_names=["PathTraceEnv", "TokenWalkEnv", "BoardMovesEnv", "TrackerEnv", "RobotEnv"],
        descriptions=[
            "Trace a token through a list of moves on a "
            + ("wrapping" if wrap else "bounded")
            + " board.",
            "Mentally execute grid moves and report the final cell.",
        ],
        hints=[
            "Net the vertical and horizontal moves separately"
            + (", then wrap around." if wrap else ", but remember the edges stop you."),
            "Follow the moves one at a time and keep the row and column written down.",
        ],
        parts=[f"attempts = {attempts}" if attempts > 1 else "", generate, checker],
        names=n,
        blocks={"walk": walk, "draw": [draw]},
    )


COMPACT_FAMILIES = {
    "grid_walk": compact_grid_walk,
    "point_transform": compact_point_transform,
    "path_trace": compact_path_trace,
}
