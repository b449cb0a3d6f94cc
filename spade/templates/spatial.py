# ruff: noqa: E501  (the templates hold generated code lines, which may be long)
"""Spatial Reasoning families: walking to a goal on a grid, transforming a point, tracing a path."""

from __future__ import annotations

import random

from spade.templates._kit import Rendered, Spec, Style, assemble

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
