"""Solve a Cluedo-style murder: suggest triples, learn refuting cards, then accuse.

skill: Logical Deduction
hint: Any card you hold or have been shown is not in the envelope. Suggest only cards still unaccounted for; in a category you have already solved, name a card from your own hand so that slot cannot be refuted. If nobody refutes, every suggested card you do not hold is in the envelope.
difficulty: 1-3
turns: multi
"""
import random
import re

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_SUSPECTS = ["Scarlet", "Mustard", "White", "Green", "Peacock", "Plum"]
_WEAPONS = ["Candlestick", "Dagger", "Pipe", "Revolver", "Rope", "Wrench"]
_ROOMS = ["Kitchen", "Ballroom", "Conservatory", "Dining", "Library", "Lounge", "Hall", "Study", "Billiard"]

# difficulty -> (suspects, weapons, rooms, opponents)
_LEVELS = {1: (4, 4, 4, 2), 2: (6, 6, 6, 3), 3: (6, 6, 9, 4)}


def _content(action):
    text = "" if action is None else str(action)
    m = _BOXED.search(text)
    return (m.group(1) if m else text).strip()


class CluedoEnv:
    def __init__(self, max_turns=20, difficulty=2):
        difficulty = int(difficulty)
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty
        s, w, r, self.opponents = _LEVELS[difficulty]
        self._cats = [("suspect", _SUSPECTS[:s]), ("weapon", _WEAPONS[:w]), ("room", _ROOMS[:r])]
        self._done = True

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        self._envelope = [self._rng.choice(cards) for _, cards in self._cats]
        deck = [c for _, cards in self._cats for c in cards if c not in self._envelope]
        self._rng.shuffle(deck)
        players = self.opponents + 1  # player 0 is you
        hands = [sorted(deck[i::players]) for i in range(players)]
        self._hand, self._opp = hands[0], hands[1:]
        self._log = []
        self._turn = 0
        self._done = False
        cats = "\n".join(f"  {name}s: {', '.join(cards)}" for name, cards in self._cats)
        ex = ", ".join(cards[-1] for _, cards in self._cats)
        obs = (
            f"A murder was committed. One suspect, one weapon and one room were sealed in an envelope:\n{cats}\n"
            f"The other cards were dealt to you and {self.opponents} opponents (Opp1..Opp{self.opponents}).\n"
            f"Your hand: {', '.join(self._hand)}.\n"
            f"Actions: \\boxed{{suggest {ex}}} names a suspect, a weapon and a room; the opponents are asked in order "
            f"Opp1, Opp2, ... and the first who holds any of the three cards shows you one of them (or nobody can). "
            f"\\boxed{{accuse SUSPECT, WEAPON, ROOM}} (same format) is your final answer: right = you win, "
            f"wrong = you lose.\n"
            f"Success: accuse the exact envelope contents. Turn budget: {self.max_turns} turns."
        )
        return obs, self._info()

    def _info(self):
        return {"suggestions": len(self._log), "turn": self._turn, "difficulty": self.difficulty}

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

    def _triple(self, words):
        """Map the words to one card per category (in category order), or None."""
        lookup = {c.lower(): (k, c) for k, (_, cards) in enumerate(self._cats) for c in cards}
        picked = {}
        for w in words:
            if w.lower() not in lookup:
                return None
            k, c = lookup[w.lower()]
            if k in picked:
                return None
            picked[k] = c
        return [picked[k] for k in range(3)] if len(picked) == 3 else None

    def _refute(self, triple, rng):
        """(opponent index, shown card) of the first opponent holding a suggested card, else None."""
        for i, hand in enumerate(self._opp):
            held = [c for c in triple if c in hand]
            if held:
                return i, rng.choice(held)
        return None

    def _play(self, text):
        m = re.fullmatch(r"(suggest|accuse)\s+(.+)", text, re.IGNORECASE | re.DOTALL)
        triple = self._triple(re.findall(r"[A-Za-z]+", m.group(2))) if m else None
        if triple is None:
            return ("Invalid action. Use \\boxed{suggest SUSPECT, WEAPON, ROOM} or "
                    "\\boxed{accuse SUSPECT, WEAPON, ROOM} with one card of each category."), -0.05, False
        if m.group(1).lower() == "accuse":
            if triple == self._envelope:
                return f"Correct! It was {', '.join(triple)}.", 1.0, True
            right = sum(a == b for a, b in zip(triple, self._envelope))
            return f"Wrong accusation ({right} of 3 cards right). You lose.", 0.0, True
        res = self._refute(triple, self._rng)
        line = (f"{', '.join(triple)}: nobody can refute" if res is None
                else f"{', '.join(triple)}: Opp{res[0] + 1} shows {res[1]}")
        self._log.append(line)
        return ("Suggestion " + line + ".\nYour hand: " + ", ".join(self._hand) + ".\nHistory:\n  "
                + "\n  ".join(self._log)), 0.0, False

    def solution(self):
        # Elimination play simulated on a copy of the RNG, so the real episode is untouched.
        rng = random.Random()
        rng.setstate(self._rng.getstate())
        seen = set(self._hand)
        solved = [None, None, None]
        moves = []
        while True:
            open_ = [[c for c in cards if c not in seen] for _, cards in self._cats]
            for k in range(3):
                if len(open_[k]) == 1:
                    solved[k] = open_[k][0]
            if all(solved):
                return moves + [f"\\boxed{{accuse {', '.join(solved)}}}"]
            triple = [solved[k] or open_[k][0] for k in range(3)]
            moves.append(f"\\boxed{{suggest {', '.join(triple)}}}")
            res = self._refute(triple, rng)
            if res is None:
                solved = [c if c not in self._hand else solved[k] for k, c in enumerate(triple)]
            else:
                seen.add(res[1])
