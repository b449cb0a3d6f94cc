"""Crack a hidden letter cipher by encrypting probe texts of your choice, then decrypt a secret message.

skill: Pattern Recognition
hint: Encrypt a run of one repeated letter (e.g. AAAAAAAAAA) to expose any position-dependent key or period, and the alphabet ABCDEFG... to see how each letter maps. Then invert that mapping position by position on the secret; the plaintext is ordinary English words.
difficulty: 1-3
turns: multi
"""
import random
import re

WORDS = ("apple river stone light green house dream quiet music table horse cloud bread plant water "
         "silver garden window winter summer forest candle bridge market planet rocket violin yellow "
         "castle dragon friend orange purple simple travel valley wonder zebra jacket kitten lemon "
         "mirror number ocean pencil rabbit shadow tiger velvet wizard anchor basket copper desert "
         "engine falcon harbor island jungle").split()
A = ord("A")


def _parse(action):
    m = re.search(r"\\boxed\{([^{}]*)\}", action or "")
    return (m.group(1) if m else (action or "")).strip()


class CipherProbeEnv:
    # cipher families, message words, probes allowed, letters per probe, decryption attempts
    LEVELS = {1: (["caesar", "affine"], 3, 3, 30, 3), 2: (["vigenere2", "progressive"], 4, 4, 20, 2),
              3: (["vigenere", "affine_vig", "progressive_affine"], 4, 4, 12, 2)}

    def __init__(self, max_turns=25, difficulty=2):
        if difficulty not in (1, 2, 3):
            raise ValueError("difficulty must be 1, 2 or 3")
        self.max_turns = max_turns
        self.difficulty = difficulty

    def _make_cipher(self, family):
        """Returns f(letter_index 0-25, position) -> letter_index; positions count letters only."""
        R = self._rng
        # No involutions (shift 13, multiplier 25): encrypting the secret must not decrypt it.
        if family == "caesar":
            k = R.choice([v for v in range(3, 24) if v != 13])
            return lambda x, i: (x + k) % 26
        a, b = R.choice([3, 5, 7, 9, 11, 15, 17, 19, 21, 23]), R.randint(1, 25)
        if family == "affine":
            return lambda x, i: (a * x + b) % 26
        if family in ("progressive", "progressive_affine"):  # the shift grows by s at every letter
            k, s = R.randint(1, 25), R.randint(1, 5)
            if family == "progressive":
                a = 1
            return lambda x, i: (a * x + k + s * i) % 26
        key = [R.randint(1, 25) for _ in range(2 if family in ("vigenere2", "affine_vig") else R.randint(3, 4))]
        if family == "affine_vig":
            return lambda x, i: (a * x + key[i % len(key)]) % 26
        return lambda x, i: (x + key[i % len(key)]) % 26

    def _encrypt(self, text):
        out, i = [], 0
        for ch in text.upper():
            if "A" <= ch <= "Z":
                out.append(chr(A + self._cipher(ord(ch) - A, i)))
                i += 1
            else:
                out.append(ch)
        return "".join(out)

    def reset(self, seed=None):
        self._rng = random.Random(seed)
        families, nwords, self.probes, self.probe_len, self.attempts = self.LEVELS[self.difficulty]
        self._cipher = self._make_cipher(self._rng.choice(families))
        self.plain = " ".join(self._rng.sample(WORDS, nwords)).upper()
        self.secret = self._encrypt(self.plain)
        self.turn, self.done, self.log = 0, False, []
        obs = (
            "A hidden cipher turns letters A-Z into other letters; spaces are kept. It may depend on the "
            "letter's position (the count of letters before it, starting at 0 for every text).\n"
            f"Secret message: {self.secret}\n"
            f"You may encrypt up to {self.probes} probe texts (up to {self.probe_len} letters each) with the same cipher, "
            "e.g. \\boxed{encrypt HELLO WORLD}.\n"
            "Submit the decrypted message with e.g. \\boxed{decrypt SOME WORDS HERE} (letters are compared, "
            f"spaces ignored). You have {self.attempts} decryption attempts and {self.max_turns} turns. "
            "Success = the exact plaintext."
        )
        return obs, {"probes_left": self.probes, "attempts_left": self.attempts}

    def step(self, action):
        info = lambda: {"probes_left": self.probes, "attempts_left": self.attempts}
        if self.done:
            return "The episode is over.", 0.0, True, False, info()
        self.turn += 1
        cmd = _parse(action)
        m = re.fullmatch(r"(encrypt|decrypt)\s*:?\s*([A-Za-z ]*)", cmd, re.I)
        reward, terminated = 0.0, False
        letters = re.sub(r"[^A-Z]", "", m.group(2).upper()) if m else ""
        if not m or not letters:
            msg = "Invalid action. Use \\boxed{encrypt SOME TEXT} or \\boxed{decrypt YOUR ANSWER} (letters and spaces)."
        elif m.group(1).lower() == "encrypt":
            if self.probes == 0:
                msg = "You have no probes left; submit a decryption."
            elif len(letters) > self.probe_len:
                msg = f"Probe too long: at most {self.probe_len} letters (it was not used)."
            else:
                self.probes -= 1
                self.log.append(f"{m.group(2).strip().upper()} -> {self._encrypt(m.group(2).strip())}")
                msg = ("Probes so far:\n" + "\n".join(self.log) + f"\nProbes left: {self.probes}. "
                       f"Secret message: {self.secret}")
        else:
            self.attempts -= 1
            target = self.plain.replace(" ", "")
            if letters == target:
                msg, reward, terminated = "Correct decryption. You win!", 1.0, True
            else:
                right = sum(a == b for a, b in zip(letters, target))
                msg = (f"Wrong: {right} of the {len(target)} letters are correct in position (you gave "
                       f"{len(letters)} letters). Attempts left: {self.attempts}.")
                if self.attempts == 0:
                    msg += " No attempts left. You lose."
                    terminated = True
        truncated = not terminated and self.turn >= self.max_turns
        if truncated:
            msg += " Out of turns."
        self.done = terminated or truncated
        return msg, reward, terminated, truncated, info()

    def solution(self):
        return ["\\boxed{encrypt AAAAAAAAAAAA}", "\\boxed{encrypt ABCDEFGHIJKL}", "\\boxed{decrypt %s}" % self.plain]
