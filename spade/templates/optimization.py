# ruff: noqa: E501  (the templates hold generated code lines, which may be long)
"""Optimization families: knapsack, cheapest route (graph or cost grid), assignment / partition."""

from __future__ import annotations

import random

from spade.templates._kit import Rendered, Spec, Style, assemble, compact_rendered, pick, scale

SKILL = "Optimization"

ITEMS = ["rope", "lamp", "tent", "map", "axe", "pot", "knife", "stove", "radio", "boots", "flask"]


def knapsack(rng: random.Random) -> Rendered:
    """Pick items under a weight limit to maximise value; answer the value or the item set."""
    style = Style.draw(rng)
    answer_kind = rng.choice(["value", "items"])
    names = {
        "items": rng.choice(["items", "goods", "catalog"]),
        "cap": rng.choice(["cap", "capacity", "limit", "max_weight"]),
        "best": rng.choice(["best", "optimum", "top_value"]),
        "count": rng.choice(["count", "n_items", "size"]),
        "tries": rng.choice(["tries", "attempts"]),
        "names_const": rng.choice(["NAMES", "ITEM_NAMES", "LABELS"]),
        "vocab": repr(rng.sample(ITEMS, 8)),
        "search": rng.choice(["_search", "_best_pack", "_solve"]),
    }
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    self.$items = [(name, rng.randint(2, 9), rng.randint(5, 30)) for name in $names_const[:self.$count]]
    total = sum(w for _, w, _ in self.$items)
    self.$cap = rng.randint(total // 3, total // 2)
    self.$best = self.$search()
    self.$turn = 0
    @start
    rows = "\n".join(f"{n}: weight {w}, value {v}" for n, w, v in self.$items)
    return f"Pack a bag with total weight at most {self.$cap}.\n{rows}\n$ask", $info
"""
    search = r"""
def $search(self):
    best = (0, ())
    for r in range(len(self.$items) + 1):
        for combo in itertools.combinations(self.$items, r):
            if sum(w for _, w, _ in combo) <= self.$cap:
                best = max(best, (sum(v for _, _, v in combo), tuple(n for n, _, _ in combo)))
    return best
"""
    if answer_kind == "value":
        names["ask"] = r"What is the largest total value you can carry? Answer \\boxed{{value}}."
        check = [
            "if not text.isdigit():",
            '    return "Answer with the best total value.", $bad, False, False, $info',
            "if int(text) == self.$best[0]:",
            "    @end",
            '    return "Optimal!", 1.0, True, False, $info',
            'msg = "Too high: not achievable." if int(text) > self.$best[0] else "A better packing exists."',
        ]
        sol = r'return [f"\\boxed{{{self.$best[0]}}}"]'
    else:
        names["ask"] = r"Which items do you take? Answer \\boxed{{item, item, ...}}."
        check = [
            'chosen = [x for x in self.$items if x[0] in re.findall(r"[a-z]+", text.lower())]',
            "if sum(w for _, w, _ in chosen) > self.$cap:",
            '    msg = "Too heavy."',
            "elif sum(v for _, _, v in chosen) == self.$best[0]:",
            "    @end",
            '    return "Optimal packing!", 1.0, True, False, $info',
            "else:",
            '    msg = f"Value {sum(v for _, _, v in chosen)} is not the best possible."',
        ]
        sol = r'return ["\\boxed{" + ", ".join(self.$best[1]) + "}"]'
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    @check
    self.$done = self.$turn >= self.$tries
    return msg, 0.0, self.$done, False, $info
"""
    solution = "def solution(self):\n    " + sol
    spec = Spec(
        skill=SKILL,
        family="knapsack",
        description=rng.choice(
            [
                "Choose items under a weight limit to maximise their total value.",
                "A small 0/1 knapsack problem.",
            ]
        ),
        hint=rng.choice(
            [
                "Compare value per unit of weight, but check the few best combinations exactly.",
                "With so few items you can list every subset that fits and keep the best one.",
            ]
        ),
        class_name=rng.choice(["Knapsack", "PackBag", "Backpack", "Loadout", "Cargo"]) + "Env",
        levels=[(names["count"], rng.choice([(4, 6, 8), (5, 6, 8), (4, 5, 7)]))],
        init=[f"self.$tries = {rng.choice([1, 2, 3])}"],
        module=["$names_const = $vocab"],
        imports=["import itertools"],
        methods=[reset, step, solution],
        helpers=[search],
        names=names,
        blocks={"check": check},
        turns="single",
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def cheapest_route(rng: random.Random) -> Rendered:
    """Minimum-cost path: through a weighted graph (Dijkstra) or across a cost grid (DP)."""
    style = Style.draw(rng)
    mode = rng.choice(["graph", "grid"])
    names = {
        "cost": rng.choice(["cost", "best", "cheapest", "optimum"]),
        "n": rng.choice(["n", "size", "nodes"]),
        "edges": rng.choice(["edges", "roads", "links"]),
        "grid": rng.choice(["grid", "costs", "field"]),
        "solve": rng.choice(["_solve", "_shortest", "_min_cost"]),
        "tries": rng.choice(["tries", "attempts"]),
    }
    if mode == "graph":
        sizes = rng.choice([(5, 7, 9), (4, 6, 8), (6, 8, 10)])
        build = [
            "self.$edges = {}",
            "for i in range(self.$n - 1):",
            "    self.$edges[(i, i + 1)] = rng.randint(5, 20)",
            "for _ in range(self.$n):",
            "    a, b = sorted(rng.sample(range(self.$n), 2))",
            "    self.$edges[(a, b)] = rng.randint(5, 30)",
        ]
        show = [
            'lines = [f"{a} - {b}: {w}" for (a, b), w in sorted(self.$edges.items())]',
            'obs = f"Roads between towns 0..{self.$n - 1} (two-way, with costs):\\n" + "\\n".join(lines)',
            'obs += f"\\nWhat is the cheapest total cost from town 0 to town {self.$n - 1}? Answer \\\\boxed{{cost}}."',
        ]
        solve = r"""
def $solve(self):
    dist = {0: 0}
    heap = [(0, 0)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist.get(u, d):
            continue
        for (a, b), w in self.$edges.items():
            if u in (a, b):
                v = b if u == a else a
                if d + w < dist.get(v, 10**9):
                    dist[v] = d + w
                    heapq.heappush(heap, (d + w, v))
    return dist[self.$n - 1]
"""
        imports = ["import heapq"]
        desc = "Find the cheapest path between two towns in a weighted road network."
        hint = "Dijkstra: settle the nearest unsettled town first and relax its roads."
    else:
        sizes = rng.choice([(3, 4, 5), (4, 5, 6), (3, 5, 6)])
        build = [
            "self.$grid = [[rng.randint(1, 9) for _ in range(self.$n)] for _ in range(self.$n)]",
        ]
        show = [
            'rows = "\\n".join(" ".join(str(v) for v in row) for row in self.$grid)',
            'obs = f"Cross this cost grid from the top-left to the bottom-right cell, moving only right or down. You pay every cell you enter, including both corners.\\n{rows}\\n"',
            'obs += "What is the minimum total cost? Answer \\\\boxed{cost}."',
        ]
        solve = r"""
def $solve(self):
    best = [[0] * self.$n for _ in range(self.$n)]
    for r in range(self.$n):
        for c in range(self.$n):
            prev = [best[r - 1][c]] if r else []
            prev += [best[r][c - 1]] if c else []
            best[r][c] = self.$grid[r][c] + (min(prev) if prev else 0)
    return best[-1][-1]
"""
        imports = []
        desc = "Find the cheapest monotone path across a grid of cell costs."
        hint = "Dynamic programming: the best cost of a cell is its own cost plus the cheaper of the cells above and to the left."
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    @build
    self.$cost = self.$solve()
    self.$turn = 0
    @start
    @show
    return obs, $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    if not text.isdigit():
        return "Answer with a whole number.", $bad, False, False, $info
    if int(text) == self.$cost:
        @end
        return "That is the minimum.", 1.0, True, False, $info
    self.$done = self.$turn >= self.$tries
    word = "lower" if int(text) > self.$cost else "not achievable"
    return f"No, the optimum is {word}.", 0.0, self.$done, False, $info
"""
    solution = r"""
def solution(self):
    return [f"\\boxed{{{self.$cost}}}"]
"""
    spec = Spec(
        skill=SKILL,
        family="cheapest_route",
        description=desc,
        hint=hint,
        class_name=rng.choice(["CheapestRoute", "ShortestPath", "MinCost", "RoutePlanner", "Toll"])
        + "Env",
        levels=[(names["n"], sizes)],
        init=[f"self.$tries = {rng.choice([1, 2, 3])}"],
        imports=imports,
        methods=[reset, step, solution],
        helpers=[solve],
        names=names,
        blocks={"build": build, "show": show},
        turns="single",
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


def assignment(rng: random.Random) -> Rendered:
    """Assign workers to jobs at minimum total cost, or split loads across two machines."""
    style = Style.draw(rng)
    mode = rng.choice(["assign", "split"])
    names = {
        "n": rng.choice(["n", "size", "count"]),
        "best": rng.choice(["best", "optimum", "target"]),
        "data": rng.choice(["table", "matrix", "loads", "data"]),
        "solve": rng.choice(["_solve", "_optimum", "_brute_force"]),
        "tries": rng.choice(["tries", "attempts"]),
    }
    if mode == "assign":
        sizes = rng.choice([(3, 4, 5), (3, 4, 4), (4, 5, 6)])
        build = [
            "self.$data = [[rng.randint(5, 40) for _ in range(self.$n)] for _ in range(self.$n)]",
        ]
        show = [
            'rows = "\\n".join(f"worker {i}: " + " ".join(str(v) for v in row) for i, row in enumerate(self.$data))',
            'obs = f"Each worker does exactly one job; entry j of a row is the cost of job j.\\n{rows}\\nWhat is the minimum total cost? Answer \\\\boxed{{cost}}."',
        ]
        solve = r"""
def $solve(self):
    return min(
        sum(self.$data[i][j] for i, j in enumerate(perm))
        for perm in itertools.permutations(range(self.$n))
    )
"""
        desc = "Assign workers to jobs one-to-one at minimum total cost."
        hint = "Try the cheapest job of each worker first, then repair the collisions; check swaps."
    else:
        sizes = rng.choice([(5, 7, 9), (4, 6, 8), (6, 8, 10)])
        build = ["self.$data = [rng.randint(3, 30) for _ in range(self.$n)]"]
        show = [
            'jobs = ", ".join(str(v) for v in self.$data)',
            'obs = f"Split these job lengths between two machines so the busier machine finishes as early as possible: {jobs}.\\nWhat is the smallest possible finishing time? Answer \\\\boxed{{time}}."',
        ]
        solve = r"""
def $solve(self):
    total = sum(self.$data)
    best = total
    for mask in range(1 << self.$n):
        a = sum(v for i, v in enumerate(self.$data) if mask >> i & 1)
        best = min(best, max(a, total - a))
    return best
"""
        desc = "Balance jobs across two machines to minimise the makespan."
        hint = (
            "Aim for half of the total; the answer is the smallest achievable sum at or above it."
        )
    reset = r"""
def reset(self, seed=None):
    rng = random.Random(seed)
    @build
    self.$best = self.$solve()
    self.$turn = 0
    @start
    @show
    return obs, $info
"""
    step = r"""
def step(self, action):
    @guard
    @parse
    self.$turn += 1
    digits = re.findall(r"\d+", text)
    if not digits:
        return "Give the optimal value as a number.", $bad, False, False, $info
    value = int(digits[0])
    if value == self.$best:
        @end
        return "Optimal!", 1.0, True, False, $info
    self.$done = self.$turn >= self.$tries
    return ("Impossible, too low." if value < self.$best else "You can do better."), 0.0, self.$done, False, $info
"""
    solution = r"""
def solution(self):
    return [f"\\boxed{{{self.$best}}}"]
"""
    spec = Spec(
        skill=SKILL,
        family="assignment",
        description=desc,
        hint=hint,
        class_name=rng.choice(["Assignment", "JobShop", "Balance", "Scheduler", "Dispatch"])
        + "Env",
        levels=[(names["n"], sizes)],
        init=[f"self.$tries = {rng.choice([1, 2, 3])}"],
        imports=["import itertools"] if mode == "assign" else [],
        methods=[reset, step, solution],
        helpers=[solve],
        names=names,
        blocks={"build": build, "show": show},
        turns="single",
    )
    return Rendered(assemble(rng, style, spec), spec.hint, SKILL, spec.family)


FAMILIES = {"knapsack": knapsack, "cheapest_route": cheapest_route, "assignment": assignment}


# --- compact form -----------------------------------------------------------------------------


def compact_knapsack(rng: random.Random) -> Rendered:
    """QuestionEnv: pick items under a weight limit to maximise value."""
    n = pick(
        rng,
        goods=["goods", "items", "catalog", "stock"],
        cap=["cap", "limit", "capacity", "max_weight"],
        best=["best", "top", "optimum"],
        combo=["combo", "chosen", "subset", "bag"],
        shown=["shown", "text", "listing"],
        k=["k", "size", "count"],
    )
    n["vocab"] = repr(rng.sample(ITEMS, 8)).replace("'", '"')
    n["count"] = scale(rng, rng.choice([(4, 6, 8), (5, 6, 8), (4, 5, 7)]))
    n["cap_expr"] = rng.choice(
        [
            "sum(w for _, w, _ in self.$goods) // 2",
            "sum(g[1] for g in self.$goods) // 2",
            "rng.randint(10, 12 + 2 * self.difficulty)",
        ]
    )
    items_answer = rng.random() < 0.35
    search = rng.choice(
        [
            [
                "for r in range(len(self.$goods) + 1):",
                "    for $combo in itertools.combinations(self.$goods, r):",
                "        if sum(g[1] for g in $combo) <= self.$cap:",
                "            $best = max($best, (sum(g[2] for g in $combo), [g[0] for g in $combo]))",
            ],
            [
                "for mask in range(2 ** len(self.$goods)):",
                "    $combo = [g for i, g in enumerate(self.$goods) if mask >> i & 1]",
                "    if sum(g[1] for g in $combo) <= self.$cap:",
                "        $best = max($best, (sum(g[2] for g in $combo), [g[0] for g in $combo]))",
            ],
        ]
    )
    n["rows"] = rng.choice(
        [
            '", ".join(f"{a} (weight {w}, value {v})" for a, w, v in self.$goods)',
            '"; ".join(f"{a}: w={w} v={v}" for a, w, v in self.$goods)',
        ]
    )
    n["draw"] = rng.choice(["rng.sample($vocab, $k)", "$vocab[:$k]"])
    if items_answer:
        n["ask"] = (
            'f"Weight limit {self.$cap}. Items: {$shown}. Best set? Answer like \\\\boxed{{rope, lamp}}."'
        )
        ret = 'return $ask, ", ".join($best[1])'
        checker = """
            def check(self, given):
                $combo = [g for g in self.$goods if g[0] in given.lower()]
                return sum(g[1] for g in $combo) <= self.$cap and sum(g[2] for g in $combo) == self.$best
            """
    else:
        n["ask"] = rng.choice(
            [
                'f"A bag holds weight {self.$cap}. Items: {$shown}. What is the largest total value that fits?"',
                'f"Choose items with total weight at most {self.$cap} to maximise value: {$shown}. Best total value?"',
            ]
        )
        ret = "return $ask, $best[0]"
        checker = ""
    tail = ["self.$best = $best[0]"] if items_answer else []
    generate = """
        def generate(self, rng):
            $k = $count
            self.$goods = [(a, rng.randint(2, 9), rng.randint(5, 30)) for a in $draw]
            self.$cap = $cap_expr
            $best = (0, [])
            @search
            @tail
            $shown = $rows
            @ret
        """
    return compact_rendered(
        rng,
        skill=SKILL,
        family="knapsack",
        base="QuestionEnv",
        class_names=["KnapsackEnv", "PackBagEnv", "BackpackEnv", "LoadoutEnv", "CargoEnv"],
        descriptions=[
            "Choose items under a weight limit to maximise their total value.",
            "Solve a small 0/1 knapsack problem.",
        ],
        hints=[
            "Compare value per unit of weight, but check the few best combinations exactly.",
            "With so few items you can list every subset that fits and keep the best one.",
        ],
        parts=[generate, checker],
        names=n,
        blocks={"search": search, "tail": tail, "ret": [ret]},
    )


def compact_cheapest_route(rng: random.Random) -> Rendered:
    """QuestionEnv: minimum-cost path through a weighted graph or across a cost grid."""
    n = pick(
        rng,
        size=["n", "size", "count"],
        cost=["cost", "dist", "best"],
        edges=["edges", "roads", "links"],
        grid=["grid", "costs", "field"],
        w=["w", "toll", "price"],
    )
    n["a"], n["b"] = rng.choice([("a", "b"), ("u", "v"), ("p", "q")])
    n["r"], n["c"] = rng.choice([("r", "c"), ("i", "j"), ("y", "x"), ("row", "col")])
    if rng.random() < 0.5:
        n["sizes"] = scale(rng, rng.choice([(5, 7, 9), (4, 6, 8), (6, 8, 10)]))
        n["big"] = str(rng.choice([10**6, 10**9, 9999]))
        build = rng.choice(
            [
                [
                    "$edges = {(i, i + 1): rng.randint(5, 20) for i in range($size - 1)}",
                    "for _ in range($size):",
                    "    $a, $b = sorted(rng.sample(range($size), 2))",
                    "    $edges[($a, $b)] = rng.randint(5, 30)",
                ],
                [
                    "$edges = {}",
                    "for i in range($size - 1):",
                    "    $edges[(i, i + 1)] = rng.randint(5, 20)",
                    "    j = rng.randint(i + 1, $size - 1)",
                    "    $edges[(i, j)] = rng.randint(5, 30)",
                ],
            ]
        )
        relax = rng.choice(
            [
                [
                    "$cost = [0] + [$big] * ($size - 1)",
                    "for _ in range($size):",
                    "    for ($a, $b), $w in $edges.items():",
                    "        $cost[$b] = min($cost[$b], $cost[$a] + $w)",
                    "        $cost[$a] = min($cost[$a], $cost[$b] + $w)",
                ],
                [
                    "$cost = {0: 0}",
                    "changed = True",
                    "while changed:",
                    "    changed = False",
                    "    for ($a, $b), $w in $edges.items():",
                    "        for x, y in (($a, $b), ($b, $a)):",
                    "            if x in $cost and $cost[x] + $w < $cost.get(y, $big):",
                    "                $cost[y] = $cost[x] + $w",
                    "                changed = True",
                ],
            ]
        )
        n["ask"] = rng.choice(
            [
                'f"Two-way roads between towns 0..{$size - 1} with tolls: {$shown}. '
                'What is the cheapest trip from town 0 to town {$size - 1}?"',
                'f"Edges with costs: {$shown}. Find the cost of the cheapest path from 0 to {$size - 1} '
                '(edges work both ways)."',
            ]
        )
        n["shown"] = rng.choice(["shown", "text", "listing"])
        generate = """
            def generate(self, rng):
                $size = $sizes
                @build
                @relax
                $shown = ", ".join(f"{$a}-{$b}: {$w}" for ($a, $b), $w in $edges.items())
                return $ask, $cost[$size - 1]
            """
        blocks = {"build": build, "relax": relax}
        description = "Find the cheapest path between two towns in a weighted road network."
        hints = [
            "Dijkstra: settle the nearest unsettled town first and relax its roads.",
            "Keep the best known cost of every town and improve it along each road until nothing changes.",
        ]
    else:
        n["sizes"] = scale(rng, rng.choice([(3, 4, 5), (4, 5, 6), (3, 5, 6)]))
        fill = rng.choice(
            [
                [
                    "for $r in range($size):",
                    "    for $c in range($size):",
                    "        options = ([$cost[$r - 1][$c]] if $r else []) + ([$cost[$r][$c - 1]] if $c else [])",
                    "        $cost[$r][$c] = $grid[$r][$c] + min(options, default=0)",
                ],
                [
                    "for $r in range($size):",
                    "    for $c in range($size):",
                    "        if $r or $c:",
                    "            up = $cost[$r - 1][$c] if $r else 10**9",
                    "            left = $cost[$r][$c - 1] if $c else 10**9",
                    "            $cost[$r][$c] += min(up, left)",
                ],
            ]
        )
        start_cost = (
            "[[0] * $size for _ in range($size)]"
            if "options" in fill[2]
            else "[row[:] for row in $grid]"
        )
        n["ask"] = rng.choice(
            [
                'f"Cross this grid from the top-left to the bottom-right cell, moving only right or down '
                'and paying every cell you enter, both corners included:\\n{$shown}\\nWhat is the minimum total cost?"',
                'f"Cell costs:\\n{$shown}\\nFind the cheapest right/down path from the top-left to the '
                'bottom-right corner (all visited cells count)."',
            ]
        )
        n["shown"] = rng.choice(["shown", "text", "table"])
        generate = f"""
            def generate(self, rng):
                $size = $sizes
                @build_grid
                $cost = {start_cost}
                @fill
                $shown = "\\n".join(" ".join(map(str, row)) for row in $grid)
                return $ask, $cost[-1][-1]
            """
        build_grid = rng.choice(
            [
                ["$grid = [[rng.randint(1, 9) for _ in range($size)] for _ in range($size)]"],
                [
                    "$grid = []",
                    "for _ in range($size):",
                    "    $grid.append([rng.randint(1, 9) for _ in range($size)])",
                ],
            ]
        )
        blocks = {"fill": fill, "build_grid": build_grid}
        description = "Find the cheapest monotone path across a grid of cell costs."
        hints = [
            "The best cost of a cell is its own cost plus the cheaper of the cells above and to the left.",
            "Fill the grid row by row with the cheapest cost of reaching each cell.",
        ]
    return compact_rendered(
        rng,
        skill=SKILL,
        family="cheapest_route",
        base="QuestionEnv",
        class_names=[
            "CheapestRouteEnv",
            "ShortestPathEnv",
            "MinCostEnv",
            "RoutePlannerEnv",
            "TollEnv",
        ],
        descriptions=[description],
        hints=hints,
        parts=[generate],
        names=n,
        blocks=blocks,
    )


def compact_assignment(rng: random.Random) -> Rendered:
    """QuestionEnv: assign workers to jobs at minimum cost, or split loads over two machines."""
    n = pick(
        rng,
        size=["n", "size", "count"],
        best=["best", "optimum", "answer"],
        data=["table", "matrix", "loads", "data"],
        shown=["shown", "text", "rows"],
        p=["p", "perm", "order"],
        mask=["mask", "bits", "split"],
        v=["v", "job", "t"],
    )
    n["i"], n["j"] = rng.choice([("i", "j"), ("w", "k"), ("r", "c")])
    if rng.random() < 0.5:
        n["sizes"] = scale(rng, rng.choice([(3, 4, 5), (3, 4, 4), (4, 5, 6)]))
        solve = rng.choice(
            [
                [
                    "$best = min(",
                    "    sum($data[$i][$j] for $i, $j in enumerate($p)) for $p in itertools.permutations(range($size))",
                    ")",
                ],
                [
                    "$best = 10**9",
                    "for $p in permutations(range($size)):",
                    "    $best = min($best, sum($data[$i][$p[$i]] for $i in range($size)))",
                ],
            ]
        )
        n["ask"] = rng.choice(
            [
                'f"Each worker does exactly one job; entry j of a row is the cost of job j.\\n{$shown}\\n'
                'What is the minimum total cost?"',
                'f"Assign every worker a different job at least total cost (row = worker, column = job):\\n'
                '{$shown}\\nMinimum total?"',
            ]
        )
        generate = """
            def generate(self, rng):
                $size = $sizes
                $data = [[rng.randint(5, 40) for _ in range($size)] for _ in range($size)]
                @solve
                $shown = "\\n".join(" ".join(str($v) for $v in row) for row in $data)
                return $ask, $best
            """
        description = "Assign workers to jobs one-to-one at minimum total cost."
        hints = [
            "Try the cheapest job of each worker first, then repair the collisions; check swaps.",
            "Every worker needs a different job, so compare whole assignments, not single cells.",
        ]
    else:
        n["sizes"] = scale(rng, rng.choice([(5, 7, 9), (4, 6, 8), (6, 8, 10)]))
        solve = rng.choice(
            [
                [
                    "total, $best = sum($data), sum($data)",
                    "for $mask in range(2 ** $size):",
                    "    a = sum($v for $i, $v in enumerate($data) if $mask >> $i & 1)",
                    "    $best = min($best, max(a, total - a))",
                ],
                [
                    "sums = {0}",
                    "for $v in $data:",
                    "    sums |= {s + $v for s in sums}",
                    "$best = min(max(s, sum($data) - s) for s in sums)",
                ],
            ]
        )
        n["ask"] = rng.choice(
            [
                'f"Split jobs of lengths {$shown} between two machines so the busier one finishes '
                'as early as possible. What is that finishing time?"',
                'f"Two machines share the jobs {$shown}. What is the smallest possible time until both are done?"',
            ]
        )
        generate = """
            def generate(self, rng):
                $size = $sizes
                $data = [rng.randint(3, 30) for _ in range($size)]
                @solve
                $shown = ", ".join(map(str, $data))
                return $ask, $best
            """
        description = "Balance jobs across two machines to minimise the makespan."
        hints = [
            "Aim for half of the total; the answer is the smallest achievable sum at or above it.",
            "List the loads one machine can reach and pick the one closest to half of the total.",
        ]
    attempts = rng.choice([1, 1, 2])
    return compact_rendered(
        rng,
        skill=SKILL,
        family="assignment",
        base="QuestionEnv",
        class_names=["AssignmentEnv", "JobShopEnv", "BalanceEnv", "SchedulerEnv", "DispatchEnv"],
        descriptions=[description],
        hints=hints,
        parts=[f"attempts = {attempts}" if attempts > 1 else "", generate],
        names=n,
        blocks={"solve": solve},
    )


COMPACT_FAMILIES = {
    "knapsack": compact_knapsack,
    "cheapest_route": compact_cheapest_route,
    "assignment": compact_assignment,
}
