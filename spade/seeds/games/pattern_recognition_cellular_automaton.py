"""Infer a hidden one-dimensional cellular-automaton rule from its history and predict the next generations.

skill: Pattern Recognition
hint: Each cell's next state depends only on itself and its two neighbours (wrapping around the edges). Build a table of the 8 neighbourhood patterns (###, ##., ..., ...) from the shown rows, then apply it to every cell of the last row.
difficulty: 1-3
turns: multi
"""
import random
import re

PATTERNS = ["###", "##.", "#.#", "#..", ".##", ".#.", "..#", "..."]  # Wolfram order: bit 7 .. bit 0


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip()


class CellularAutomatonEnv:
    # rule pool, row width, rows shown, wrong answers allowed
    LEVELS = {
        1: ([90, 184, 170, 240, 195, 60, 102, 226], 11, 5, 3),
        2: ([30, 45, 54, 110, 150, 126, 18, 22, 57, 73], 15, 4, 2),
        3: ([30, 45, 54, 73, 105, 106, 110, 122, 137, 150, 161, 193, 225], 19, 3, 1),
    }
    ASKED = 3

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _next(self, row):
        w = len(row)
        out = ""
        for i in range(w):
            pat = row[i - 1] + row[i] + row[(i + 1) % w]
            out += "#" if (self.rule >> (7 - PATTERNS.index(pat))) & 1 else "."
        return out

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        rules, width, nshown, self.lives = self.LEVELS[self.difficulty]
        while True:
            self.rule = self._rng.choice(rules)
            row = "".join(self._rng.choice("#.") for _ in range(width))
            rows = [row]
            for _ in range(nshown + self.ASKED - 1):
                rows.append(self._next(rows[-1]))
            shown = rows[:nshown]
            seen = {r[i - 1] + r[i] + r[(i + 1) % width] for r in shown[:-1] for i in range(width)}
            # the shown transitions must reveal every pattern, and no asked row may be trivial
            if len(seen) == 8 and all("#" in r and "." in r for r in rows) and len(set(rows)) == len(rows):
                break
        self.rows, self.hidden = shown, rows[nshown:]
        self.idx, self.turn, self.done = 0, 0, False
        obs = (
            f"A row of {width} cells evolves by a fixed hidden rule ('#' = alive, '.' = dead). Every cell's next "
            "state depends only on its own state and its left and right neighbours; the row wraps around "
            "(the first and last cells are neighbours). The same rule applies to every cell and every step.\n"
            f"Generations so far:\n{self._history()}\n"
            f"Predict the next {self.ASKED} generations, one per turn, as a {width}-character string of '#' and "
            f"'.', e.g. \\boxed{{{'#.' * (width // 2)}#}} ('1'/'0' also accepted).\n"
            f"A wrong row is answered with the number of wrong cells and costs a life; you have {self.lives} "
            f"lives and {self.max_turns} turns. Success = all {self.ASKED} generations predicted."
        )
        return obs, {"lives": self.lives, "predicted": 0}

    def _history(self):
        return "\n".join(f"  gen {i}: {r}" for i, r in enumerate(self.rows))

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {"lives": self.lives, "predicted": self.idx}
        self.turn += 1
        text = re.sub(r"[\s,]", "", _parse(action)).translate(str.maketrans("10", "#."))
        width = len(self.rows[0])
        reward, terminated = 0.0, False
        if not re.fullmatch(r"[#.]+", text) or len(text) != width:
            msg = f"Invalid row. Give exactly {width} characters of '#' and '.' (or 1 and 0)."
        else:
            want = self.hidden[self.idx]
            if text == want:
                self.rows.append(want)
                self.idx += 1
                msg = "Correct!\n" + self._history()
                if self.idx == len(self.hidden):
                    msg += "\nAll generations predicted. You win!"
                    reward, terminated = 1.0, True
                else:
                    msg += f"\nPredict gen {len(self.rows)}."
            else:
                self.lives -= 1
                wrong = sum(a != b for a, b in zip(text, want))
                msg = f"Wrong: {wrong} of {width} cells are incorrect. Lives left: {self.lives}."
                if self.lives == 0:
                    msg += " No lives left. You lose."
                    terminated = True
                else:
                    msg += f" Predict gen {len(self.rows)} again."
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of turns."
        self.done = terminated or truncated
        return msg, reward, terminated, truncated, {"lives": self.lives, "predicted": self.idx}

    def solution(self):
        return ["\\boxed{%s}" % r for r in self.hidden]
