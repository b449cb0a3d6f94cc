"""GEM's games (Apache-2.0, `gem-llm`, installed `--no-deps`) as multi-turn environments.

Each item is one game at a fixed seed: the program makes `game:<Name>-v0-<difficulty>` with
`gem.make` in the sandbox, shows the game's instructions and, after every move, the game's reply
and its task suffix (the board, for board games), as GEM's own chat wrapper does. Moves are
`\\boxed{...}`, GEM's format and ours.

Scoring: GEM's rewards are shaped (progress, partial credit) and at its own turn cap it returns
`terminated=True, truncated=True` with a partial reward. A win is a clean finish: terminated, not
truncated, reward > 0; and for Game2048, whose game-over step also carries a positive progress
reward, the game's own `_has_won()`. Every other step rewards 0, so a return > 0 means a win.

Levels: `--level 1` (default) is GEM's `easy` variant, `--level 2` its `hard` one. Offline games
only: Wordle, Hangman and WordSearch download nltk corpora, Crosswords needs pandas. Known answers
(`--policy solution`) exist for the games whose answer is in the state at reset
(GuessTheNumber, Mastermind, Sudoku, TowerofHanoi); Minesweeper places its mines at the first
reveal, and FifteenPuzzle, Game2048 and Sokoban would need a solver.
"""

from __future__ import annotations

from collections.abc import Sequence

from spade.types import Program

GAMES = (
    "GuessTheNumber",
    "Mastermind",
    "Minesweeper",
    "FifteenPuzzle",
    "Sudoku",
    "TowerofHanoi",
    "Game2048",
    "Sokoban",
)
EXCLUDED = {
    "Wordle": "downloads an nltk corpus (network)",
    "Hangman": "downloads an nltk corpus (network)",
    "WordSearch": "downloads an nltk corpus (network)",
    "Crosswords": "needs pandas and its word lists",
}
LEVELS = {1: "easy", 2: "hard"}
TEMPLATE = '''"""GEM game:{game}-v0-{difficulty} item {index}, game seed {game_seed}, Apache-2.0."""
import gem

GAME, GAME_ID, GAME_SEED = {game!r}, {game_id!r}, {game_seed!r}


def _hanoi(n, source, spare, target):
    if n == 0:
        return []
    return _hanoi(n - 1, source, target, spare) + [(source, target)] + _hanoi(
        n - 1, spare, source, target
    )


class GemGameEnv:
    def __init__(self, max_turns=None):
        self.game = gem.make(GAME_ID)
        self.max_turns = self.game.max_turns

    def reset(self, seed=None):
        observation, info = self.game.reset(seed=GAME_SEED)  # the item, whatever the episode seed
        self.max_turns = self.game.max_turns
        return observation + "\\n" + str(info.get("suffix", "")), {{}}

    def step(self, action):
        observation, reward, terminated, truncated, info = self.game.step(str(action))
        if terminated or truncated:
            won = terminated and not truncated and reward > 0
            if GAME == "Game2048":  # its game-over step carries a positive progress reward
                won = won and self.game._has_won()
            return observation, (1.0 if won else 0.0), True, False, {{}}
        return observation + "\\n" + str(info.get("suffix", "")), 0.0, False, False, {{}}

    def solution(self):
        g = self.game
        if GAME == "GuessTheNumber":
            return ["\\\\boxed{{" + str(g.game_number) + "}}"]
        if GAME == "Mastermind":
            return ["\\\\boxed{{" + " ".join(str(n) for n in g.game_code) + "}}"]
        if GAME == "TowerofHanoi":
            moves = _hanoi(g.num_disks, "A", "B", "C")
            return ["\\\\boxed{{" + a + " " + b + "}}" for a, b in moves]
        if GAME == "Sudoku":
            return [
                "\\\\boxed{{" + str(r + 1) + " " + str(c + 1) + " " + str(g.full_grid[r][c]) + "}}"
                for r, row in enumerate(g.board)
                for c, value in enumerate(row)
                if value == 0
            ]
        return None
'''


def programs(
    subsets: Sequence[str], *, limit: int, level: int | None = None, seed: int = 0
) -> list[Program]:
    """`limit` games of each name in `subsets` (empty: all eight) at `level` (1 easy, 2 hard);
    item `i` is the game at seed `100_000 * seed + i`. Skill `gem:<Game>`."""
    names = list(subsets) or list(GAMES)
    for name in names:
        if name in EXCLUDED:
            raise ValueError(f"gem:{name} is excluded: {EXCLUDED[name]}")
        if name not in GAMES:
            raise ValueError(f"gem has no offline game {name!r}: choose from {', '.join(GAMES)}")
    if level is not None and level not in LEVELS:
        raise ValueError(f"gem levels are 1 (easy) and 2 (hard), got {level}")
    difficulty = LEVELS[level or 1]
    out = []
    for name in names:
        for index in range(limit):
            game_seed = 100_000 * seed + index
            code = TEMPLATE.format(
                game=name,
                game_id=f"game:{name}-v0-{difficulty}",
                difficulty=difficulty,
                index=index,
                game_seed=game_seed,
            )
            out.append(Program.from_code(code, skill=f"gem:{name}", source=f"gem:{name}/{index}"))
    return out
