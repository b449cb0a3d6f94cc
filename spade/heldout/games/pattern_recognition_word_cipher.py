"""Infer a secret chain of letter operations from example words and apply it to a new word.

skill: Pattern Recognition
hint: Compare letter multisets first: same letters means only reordering steps, letters moved by a constant distance means a shift. Check where the first and last letters went to spot reversal or rotation, and watch the vowels separately.
difficulty: 1-3
turns: single
"""
import itertools
import random
import re

_WORDS = ["garden", "planet", "silver", "bridge", "candle", "forest", "market", "window", "rocket", "pillow",
          "stone", "river", "cloud", "tiger", "lemon", "music", "paper", "chair", "grape", "ocean", "bread",
          "spring", "mirror", "castle", "winter", "summer", "button", "pencil", "dragon", "travel", "honey",
          "violet", "anchor", "jungle", "marble", "puzzle", "shadow", "temple", "wizard", "yellow"]
_VOWELS = "aeiou"


def _shift(w, k):
    return "".join(chr((ord(ch) - 97 + k) % 26 + 97) for ch in w)


def _swap_pairs(w):
    return "".join(w[i + 1] + w[i] if i + 1 < len(w) else w[i] for i in range(0, len(w), 2))


def _ops():
    """All primitive operations as (description, function)."""
    ops = [(f"shift each letter forward by {k}", lambda w, k=k: _shift(w, k)) for k in range(1, 6)]
    ops.append(("reverse the word", lambda w: w[::-1]))
    ops.append(("swap adjacent letter pairs", _swap_pairs))
    ops += [(f"rotate left by {r}", lambda w, r=r: w[r:] + w[:r]) for r in range(1, 4)]
    ops.append(("replace each vowel by the next vowel", lambda w: "".join(
        _VOWELS[(_VOWELS.index(c) + 1) % 5] if c in _VOWELS else c for c in w)))
    return ops


def _apply(chain, w):
    for _, f in chain:
        w = f(w)
    return w


# (chain length, number of examples)
_LEVELS = {1: (1, 3), 2: (2, 4), 3: (3, 5)}
_ATTEMPTS = 2


class WordCipherEnv:
    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in _LEVELS:
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        length, nex = _LEVELS[self.difficulty]
        ops = _ops()
        chains = [c for n in range(1, length + 1) for c in itertools.product(ops, repeat=n)]
        while True:
            chain = [self._rng.choice(ops) for _ in range(length)]
            words = self._rng.sample(_WORDS, nex + 1)
            examples, self.query = words[:nex], words[nex]
            pairs = [(w, _apply(chain, w)) for w in examples]
            if any(a == b for a, b in pairs):
                continue
            # the puzzle is fair only if every chain that explains the examples gives the same answer
            answers = {_apply(c, self.query) for c in chains if all(_apply(c, a) == b for a, b in pairs)}
            if len(answers) == 1 and self.query not in answers:
                break
        self._answer = answers.pop()
        self.attempts = _ATTEMPTS
        self.turn = 0
        self.done = False
        lines = "\n".join(f"  {a} -> {b}" for a, b in pairs)
        obs = (
            f"A secret cipher turns words into code words by applying the same chain of {length} letter "
            f"operation{'s' if length > 1 else ''} in a fixed order. Each operation is one of: shift every letter "
            "forward in the alphabet by 1-5 (z wraps to a), reverse the word, swap adjacent letter pairs "
            "(1st<->2nd, 3rd<->4th, ...), rotate the word left by 1-3 letters, or replace each vowel by the next "
            f"vowel (a->e->i->o->u->a).\nExamples:\n{lines}\n"
            f"What does '{self.query}' become? Reply with the code word, e.g. \\boxed{{xqzt}}. "
            f"You have {_ATTEMPTS} attempts; after a wrong one you learn how many letters are in the right place. "
            "You win by giving the exact code word."
        )
        return obs, {"attempts_left": self.attempts}

    def solution(self):
        return [f"\\boxed{{{self._answer}}}"]

    def step(self, action):
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
        guess = re.sub(r"[^a-z]", "", (m.group(1) if m else (action or "")).lower())
        term, reward = False, 0.0
        if len(guess) != len(self._answer):
            obs, reward = f"The code word has {len(self._answer)} letters (the same length as '{self.query}').", -0.05
        elif guess == self._answer:
            self.done = True
            return "Correct code word. You win!", 1.0, True, False, {"attempts_left": self.attempts - 1}
        else:
            self.attempts -= 1
            right = sum(a == b for a, b in zip(guess, self._answer))
            obs = f"Wrong: {right} of {len(self._answer)} letters are in the right place."
            term = self.attempts <= 0
            obs += " No attempts left. You lose." if term else f" Attempts left: {self.attempts}."
        truncated = not term and self.turn >= self.max_turns
        self.done = term or truncated
        return obs, reward, term, truncated, {"attempts_left": self.attempts}
