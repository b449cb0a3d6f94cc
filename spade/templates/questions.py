"""Question families: easy one-answer questions, for the Agent's warm start and its evaluation.

    from spade.templates.questions import TRAIN_FAMILIES, draw, reply, question_env,
    fixed_question_env q = draw("add", random.Random(3), level=1)     # Question("What is 7 + 7?",
    "14", "7 + 7 = 14") reply(q)                                       # "7 + 7 = 14, so
    \\boxed{14}"

A 135M model answers "What is 7 + 7?" in the right format only after a warm start, and the
warm start used to teach it answers without reasoning (`solution()` replays) on questions that
need computation it cannot do in one token: it answered `\\boxed{18}` (docs/warmstart.md). Each
family here draws a question, its answer and a short worked step ("7 + 7 = 14"); the Agent is
taught to write the step, then the box, which is what helps a small model.

Every family is a self-contained function `(rng, level, held_out) -> (question, answer, step)`
over `WORDS`, so its own source runs inside the sandbox as the `generate` of a `QuestionEnv`
(`question_env`): the pool's question environments and the warm start draw from the same code.
Each family has several phrasings; the last is held out (`held_out=True` draws only it), and
`HELDOUT_FAMILIES` and `HELDOUT_INSTRUCTIONS` are never trained on: the far evaluation set
(`spade.evals.sets`) is made of them, written the way the paper's reference writes a one-question
environment (`fixed_question_env`: a plain class, one fixed question, `\\boxed{}` answer).
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable
from dataclasses import dataclass

WORDS = (
    "apple",
    "river",
    "stone",
    "cloud",
    "tiger",
    "lemon",
    "chair",
    "plant",
    "bread",
    "house",
    "green",
    "music",
    "ocean",
    "paper",
    "horse",
    "candle",
    "garden",
    "rabbit",
    "winter",
    "yellow",
    "pencil",
    "butter",
    "basket",
    "forest",
    "silver",
    "cat",
    "dog",
    "sun",
    "map",
    "cup",
    "box",
    "banana",
    "kitten",
    "pepper",
    "button",
    "letter",
    "summer",
    "coffee",
    "bottle",
    "mirror",
)
"""Words the families draw from (embedded in every question environment's source)."""

NAMES = ("Ann", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jo")
ITEMS = ("apples", "books", "coins", "cups", "pens", "shells", "stamps", "cards", "keys")


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    step: str
    """The worked step the Agent writes before its box ("7 + 7 = 14")."""


# --- the families: each self-contained (its source runs in the sandbox) ------------------------


def add(rng, level, held_out=False):
    top = (9, 50, 99)[level - 1]
    a, b = rng.randint(1, top), rng.randint(1, top)
    asks = (
        "What is {a} + {b}?",
        "Add {a} and {b}.",
        "Compute {a} plus {b}.",
        "Find the sum of {a} and {b}.",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(a=a, b=b), a + b, f"{a} + {b} = {a + b}"


def subtract(rng, level, held_out=False):
    top = (9, 50, 99)[level - 1]
    a = rng.randint(2, top)
    b = rng.randint(1, a)
    asks = (
        "What is {a} - {b}?",
        "Subtract {b} from {a}.",
        "What is {a} minus {b}?",
        "Take {b} away from {a}. What is left?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(a=a, b=b), a - b, f"{a} - {b} = {a - b}"


def multiply(rng, level, held_out=False):
    a, b = rng.randint(2, (5, 9, 12)[level - 1]), rng.randint(2, (5, 9, 9)[level - 1])
    asks = (
        "What is {a} times {b}?",
        "What is {a} * {b}?",
        "Multiply {a} by {b}.",
        "What is the product of {a} and {b}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(a=a, b=b), a * b, f"{a} * {b} = {a * b}"


def divide(rng, level, held_out=False):
    b = rng.randint(2, (5, 9, 12)[level - 1])
    q = rng.randint(1, (5, 9, 12)[level - 1])
    a = b * q
    asks = (
        "What is {a} divided by {b}?",
        "What is {a} / {b}?",
        "Divide {a} by {b}.",
        "How many times does {b} go into {a}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(a=a, b=b), q, f"{a} / {b} = {q}"


def double(rng, level, held_out=False):
    n = rng.randint(1, (9, 50, 99)[level - 1])
    asks = (
        "What is double {n}?",
        "What is twice {n}?",
        "Double the number {n}.",
        "What do you get when you double {n}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), 2 * n, f"2 * {n} = {2 * n}"


def larger(rng, level, held_out=False):
    a, b = rng.sample(range(1, (20, 100, 1000)[level - 1]), 2)
    asks = (
        "Which is larger, {a} or {b}?",
        "Which number is bigger: {a} or {b}?",
        "What is the larger of {a} and {b}?",
        "Of {a} and {b}, which is greater?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(a=a, b=b), max(a, b), f"{max(a, b)} > {min(a, b)}"


def parity(rng, level, held_out=False):
    n = rng.randint(1, (20, 100, 1000)[level - 1])
    word = "even" if n % 2 == 0 else "odd"
    asks = (
        "Is {n} even or odd?",
        "Is the number {n} odd or even?",
        "Tell whether {n} is even or odd.",
        "Is {n} an even or an odd number?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), word, f"{n} ends in {n % 10}, which is {word}"


def largest(rng, level, held_out=False):
    xs = rng.sample(range(1, (20, 100, 1000)[level - 1]), (3, 4, 5)[level - 1])
    shown = ", ".join(str(x) for x in xs)
    asks = (
        "What is the largest number in {xs}?",
        "Which is the biggest of {xs}?",
        "Find the maximum of {xs}.",
        "Of the numbers {xs}, which is highest?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(xs=shown), max(xs), f"the largest of {shown} is {max(xs)}"


def next_term(rng, level, held_out=False):
    step = rng.randint(1, (3, 5, 9)[level - 1])
    first = rng.randint(1, (10, 20, 50)[level - 1])
    xs = [first + step * i for i in range(4)]
    shown = ", ".join(str(x) for x in xs)
    asks = (
        "What comes next: {xs}, ?",
        "What is the next number in the sequence {xs}?",
        "Continue the pattern: {xs}, ...",
        "Which number follows {xs}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return (
        ask.format(xs=shown),
        xs[-1] + step,
        f"each step adds {step}, {xs[-1]} + {step} = {xs[-1] + step}",
    )


def word_length(rng, level, held_out=False):
    word = rng.choice(WORDS)
    asks = (
        "How many letters are in the word '{w}'?",
        "How many letters does '{w}' have?",
        "Count the letters in '{w}'.",
        "What is the length of the word '{w}'?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(w=word), len(word), f"{'-'.join(word)} has {len(word)} letters"


def first_letter(rng, level, held_out=False):
    word = rng.choice(WORDS)
    asks = (
        "What is the first letter of '{w}'?",
        "Which letter does '{w}' start with?",
        "Give the first letter of the word '{w}'.",
        "'{w}' begins with which letter?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(w=word), word[0], f"{word} starts with {word[0]}"


def count_letter(rng, level, held_out=False):
    # a letter the word repeats: an answer of 1 would let a constant reply win (the validator)
    word = rng.choice([w for w in WORDS if len(set(w)) < len(w)])
    letter = rng.choice(sorted(c for c in set(word) if word.count(c) > 1))
    n = word.count(letter)
    asks = (
        "How many times does the letter '{c}' appear in '{w}'?",
        "Count the letter '{c}' in the word '{w}'.",
        "How many '{c}'s are in '{w}'?",
        "In '{w}', how often does '{c}' occur?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(c=letter, w=word), n, f"{'-'.join(word)} has {n} {letter}"


def next_letter(rng, level, held_out=False):
    i = rng.randint(0, 24)
    c, d = "abcdefghijklmnopqrstuvwxyz"[i], "abcdefghijklmnopqrstuvwxyz"[i + 1]
    asks = (
        "Which letter comes after '{c}' in the alphabet?",
        "What is the next letter after '{c}'?",
        "In the alphabet, what letter follows '{c}'?",
        "Name the letter right after '{c}'.",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(c=c), d, f"after {c} comes {d}"


def longer_word(rng, level, held_out=False):
    a, b = rng.sample([w for w in WORDS if len(w) != 5], 2)
    while len(a) == len(b):
        a, b = rng.sample([w for w in WORDS if len(w) != 5], 2)
    long, short = (a, b) if len(a) > len(b) else (b, a)
    asks = (
        "Which word is longer, '{a}' or '{b}'?",
        "Which has more letters: '{a}' or '{b}'?",
        "Of '{a}' and '{b}', which word is longer?",
        "Pick the longer word: '{a}' or '{b}'.",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return (
        ask.format(a=a, b=b),
        long,
        f"{long} has {len(long)} letters and {short} has {len(short)}",
    )


def story_add(rng, level, held_out=False):
    name = rng.choice(("Ann", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana"))
    item = rng.choice(("apples", "books", "coins", "cups", "pens", "shells", "cards", "keys"))
    a, b = rng.randint(1, (9, 30, 90)[level - 1]), rng.randint(1, (9, 30, 90)[level - 1])
    asks = (
        "{n} has {a} {i} and gets {b} more. How many {i} does {n} have now?",
        "{n} had {a} {i}, then found {b} more. How many {i} now?",
        "{n} buys {a} {i} and then {b} {i}. How many {i} in all?",
        "There are {a} {i} in a box and {n} adds {b}. How many {i} are in the box?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=name, i=item, a=a, b=b), a + b, f"{a} + {b} = {a + b}"


def round_ten(rng, level, held_out=False):
    n = rng.randint(11, (99, 999, 9999)[level - 1])
    while n % 10 == 5:
        n = rng.randint(11, (99, 999, 9999)[level - 1])
    r = (n + 5) // 10 * 10
    asks = (
        "Round {n} to the nearest ten.",
        "What is {n} rounded to the nearest 10?",
        "Round the number {n} to the nearest ten.",
        "To the nearest ten, what is {n}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), r, f"{n} is nearer {r} than {r - 10 if r > n else r + 10}"


# more trained families (session 18): the held-out families ask for things a model of this size
# gets wrong as facts ("7 * 7 = 44") or answers with the template of a similar-looking trained
# family ("16 is nearer 16 than 160" for the number after 16); these teach neighbouring facts and
# words ("four times", "a third of", "ten more than"), never a held-out family's own question


def quadruple(rng, level, held_out=False):
    n = rng.randint(1, (9, 25, 50)[level - 1])
    asks = (
        "What is four times {n}?",
        "What is {n} times four?",
        "Multiply {n} by 4.",
        "What is 4 lots of {n}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), 4 * n, f"4 * {n} = {4 * n}"


def third(rng, level, held_out=False):
    n = 3 * rng.randint(1, (9, 30, 60)[level - 1])
    asks = (
        "What is a third of {n}?",
        "What is {n} divided by 3?",
        "Split {n} into 3 equal parts. How big is each part?",
        "What is one third of {n}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), n // 3, f"{n} / 3 = {n // 3}"


def ten_more(rng, level, held_out=False):
    n = rng.randint(1, (50, 500, 5000)[level - 1])
    asks = (
        "What is ten more than {n}?",
        "Add ten to {n}.",
        "What is {n} plus ten?",
        "Count on ten from {n}. Which number do you reach?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), n + 10, f"{n} + 10 = {n + 10}"


def ten_less(rng, level, held_out=False):
    n = rng.randint(11, (60, 500, 5000)[level - 1])
    asks = (
        "What is ten less than {n}?",
        "Take ten away from {n}.",
        "What is {n} minus ten?",
        "Count back ten from {n}. Which number do you reach?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), n - 10, f"{n} - 10 = {n - 10}"


def longest_word(rng, level, held_out=False):
    words = rng.sample(WORDS, 3)
    while len({len(w) for w in words}) < 3:
        words = rng.sample(WORDS, 3)
    long = max(words, key=len)
    shown = ", ".join(words)
    asks = (
        "Which is the longest word: {ws}?",
        "Of the words {ws}, which has the most letters?",
        "Find the longest of these words: {ws}.",
        "Which word among {ws} is longest?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    step = ", ".join(f"{w} has {len(w)}" for w in words)
    return ask.format(ws=shown), long, f"{step}; the longest is {long}"


def shortest_word(rng, level, held_out=False):
    words = rng.sample(WORDS, 3)
    while len({len(w) for w in words}) < 3:
        words = rng.sample(WORDS, 3)
    short = min(words, key=len)
    shown = ", ".join(words)
    asks = (
        "Which is the shortest word: {ws}?",
        "Of the words {ws}, which has the fewest letters?",
        "Find the shortest of these words: {ws}.",
        "Which word among {ws} is shortest?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    step = ", ".join(f"{w} has {len(w)}" for w in words)
    return ask.format(ws=shown), short, f"{step}; the shortest is {short}"


def story_compare(rng, level, held_out=False):
    a_name, b_name = rng.sample(("Ann", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana"), 2)
    item = rng.choice(("apples", "books", "coins", "cups", "pens", "shells", "cards", "keys"))
    a, b = rng.sample(range(1, (10, 30, 90)[level - 1]), 2)
    more = rng.random() < 0.5
    word = "more" if more else "fewer"
    asks = (
        "{x} has {a} {i} and {y} has {b} {i}. Who has {w} {i}?",
        "{x} has {a} {i}; {y} has {b}. Which of them has {w}?",
        "{x} owns {a} {i} and {y} owns {b} {i}. Who owns {w} {i}?",
        "Between {x} with {a} {i} and {y} with {b} {i}, who has {w}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    winner = a_name if (a > b) == more else b_name
    big, small = max(a, b), min(a, b)
    step = f"{big} > {small}: {winner} has {word}"
    return ask.format(x=a_name, y=b_name, a=a, b=b, i=item, w=word), winner, step


# each with its mirror above (larger / smaller, next / previous letter...): the Agent must read the
# question, not match its look


def smaller(rng, level, held_out=False):
    a, b = rng.sample(range(1, (20, 100, 1000)[level - 1]), 2)
    asks = (
        "Which is smaller, {a} or {b}?",
        "Which number is less: {a} or {b}?",
        "What is the smaller of {a} and {b}?",
        "Of {a} and {b}, which is lower?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(a=a, b=b), min(a, b), f"{min(a, b)} < {max(a, b)}"


def add_three(rng, level, held_out=False):
    a, b, c = (rng.randint(1, (9, 20, 50)[level - 1]) for _ in range(3))
    asks = (
        "What is {a} + {b} + {c}?",
        "Add {a}, {b} and {c}.",
        "Compute the sum {a} + {b} + {c}.",
        "What do {a}, {b} and {c} add up to?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(a=a, b=b, c=c), a + b + c, f"{a} + {b} = {a + b}, {a + b} + {c} = {a + b + c}"


def last_letter(rng, level, held_out=False):
    word = rng.choice(WORDS)
    asks = (
        "What is the last letter of '{w}'?",
        "Which letter does '{w}' end with?",
        "Give the final letter of the word '{w}'.",
        "'{w}' ends in which letter?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(w=word), word[-1], f"{word} ends with {word[-1]}"


def half(rng, level, held_out=False):
    n = 2 * rng.randint(1, (9, 50, 99)[level - 1])
    asks = (
        "What is half of {n}?",
        "What is {n} divided by 2?",
        "Halve the number {n}.",
        "What is one half of {n}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), n // 2, f"{n} / 2 = {n // 2}"


def smallest(rng, level, held_out=False):
    xs = rng.sample(range(1, (20, 100, 1000)[level - 1]), (3, 4, 5)[level - 1])
    shown = ", ".join(str(x) for x in xs)
    asks = (
        "What is the smallest number in {xs}?",
        "Which is the least of {xs}?",
        "Find the minimum of {xs}.",
        "Of the numbers {xs}, which is lowest?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(xs=shown), min(xs), f"the smallest of {shown} is {min(xs)}"


def story_subtract(rng, level, held_out=False):
    name = rng.choice(("Ann", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana"))
    item = rng.choice(("apples", "books", "coins", "cups", "pens", "shells", "cards", "keys"))
    a = rng.randint(4, (9, 30, 90)[level - 1])
    b = rng.randint(1, a - 2)
    asks = (
        "{n} has {a} {i} and gives away {b}. How many {i} are left?",
        "{n} had {a} {i} and lost {b}. How many {i} now?",
        "There were {a} {i}; {n} took {b}. How many {i} remain?",
        "{n} starts with {a} {i} and uses {b}. How many are left?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=name, i=item, a=a, b=b), a - b, f"{a} - {b} = {a - b}"


def previous_letter(rng, level, held_out=False):
    i = rng.randint(1, 25)
    c, d = "abcdefghijklmnopqrstuvwxyz"[i], "abcdefghijklmnopqrstuvwxyz"[i - 1]
    asks = (
        "Which letter comes before '{c}' in the alphabet?",
        "What letter is just before '{c}'?",
        "In the alphabet, which letter precedes '{c}'?",
        "Name the letter right before '{c}'.",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(c=c), d, f"before {c} comes {d}"


def square(rng, level, held_out=False):
    n = rng.randint(1, (9, 12, 20)[level - 1])
    asks = (
        "What is {n} squared?",
        "What is {n} times itself?",
        "Compute the square of {n}.",
        "What is {n} to the power of 2?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), n * n, f"{n} * {n} = {n * n}"


def triple(rng, level, held_out=False):
    n = rng.randint(1, (9, 30, 60)[level - 1])
    asks = (
        "What is three times {n}?",
        "What is triple {n}?",
        "Triple the number {n}.",
        "What do you get when you multiply {n} by three?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), 3 * n, f"3 * {n} = {3 * n}"


def shorter_word(rng, level, held_out=False):
    a, b = rng.sample([w for w in WORDS if len(w) != 5], 2)
    while len(a) == len(b):
        a, b = rng.sample([w for w in WORDS if len(w) != 5], 2)
    long, short = (a, b) if len(a) > len(b) else (b, a)
    asks = (
        "Which word is shorter, '{a}' or '{b}'?",
        "Which has fewer letters: '{a}' or '{b}'?",
        "Of '{a}' and '{b}', which word is shorter?",
        "Pick the shorter word: '{a}' or '{b}'.",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    step = f"{short} has {len(short)} letters and {long} has {len(long)}"
    return ask.format(a=a, b=b), short, step


def number_before(rng, level, held_out=False):
    n = rng.randint(2, (50, 500, 5000)[level - 1])
    asks = (
        "What number comes just before {n}?",
        "Which number is one less than {n}?",
        "What is the number right before {n}?",
        "Counting up, which number comes before {n}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), n - 1, f"{n} - 1 = {n - 1}"


def number_after(rng, level, held_out=False):
    n = rng.randint(1, (50, 500, 5000)[level - 1])
    asks = (
        "What number comes just after {n}?",
        "Which number is one more than {n}?",
        "What is the number right after {n}?",
        "Counting up, which number follows {n}?",
    )
    ask = rng.choice(asks[-1:] if held_out else asks[:-1])
    return ask.format(n=n), n + 1, f"{n} + 1 = {n + 1}"


Family = Callable[[random.Random, int, bool], tuple[str, object, str]]

TRAIN_FAMILIES: dict[str, Family] = {
    f.__name__: f
    for f in (
        add,
        subtract,
        multiply,
        divide,
        double,
        add_three,
        larger,
        smaller,
        parity,
        largest,
        next_term,
        word_length,
        first_letter,
        last_letter,
        count_letter,
        next_letter,
        previous_letter,
        longer_word,
        story_add,
        story_subtract,
        round_ten,
        quadruple,
        third,
        ten_more,
        ten_less,
        longest_word,
        shortest_word,
        story_compare,
    )
}
"""Families the warm start and the self-play pool train on (28)."""

HELDOUT_FAMILIES: dict[str, Family] = {
    f.__name__: f
    for f in (smallest, half, square, triple, shorter_word, number_before, number_after)
}
"""Families never trained on: the far evaluation set (7). Each asks for something the trained
families teach in parts (the smallest of a list: `smaller` and `largest`; half: `divide`;
the number before: `subtract`...), in words the warm start never showed."""

FAMILIES: dict[str, Family] = {**TRAIN_FAMILIES, **HELDOUT_FAMILIES}

SKILL = "Mathematical Reasoning"
"""The skill question environments are filed under (the pool's skills are the paper's six;
these are arithmetic and reading of the easiest kind)."""

REFERENCE_INSTRUCTION = "Give your final answer as \\boxed{answer}."
"""How the paper's reference asks for an answer (and the `QuestionEnv` default)."""

TRAIN_INSTRUCTIONS = (
    REFERENCE_INSTRUCTION,
    "Put your answer in \\boxed{}.",
    "Answer with \\boxed{your answer}.",
    "Reply with the answer inside \\boxed{}.",
    "Write your final answer as \\boxed{...}.",
    # with a made-up value in the example (the model copied "\\boxed{42}" when it had never
    # seen an example value: session 18)
    "Box your answer, for example \\boxed{7}.",
    "Write the answer in a box, as in \\boxed{15}.",
)
"""Answer instructions the warm start shows (the reference's first)."""

HELDOUT_INSTRUCTIONS = (
    "Please box your final answer, like \\boxed{42}.",
    "End your reply with \\boxed{answer}.",
)
"""Answer instructions never trained on (the far evaluation set)."""


def draw(family: str, rng: random.Random, level: int = 1, held_out: bool = False) -> Question:
    """One question of `family` at difficulty `level` (1-3); `held_out` draws the held-out
    phrasing."""
    if family not in FAMILIES:
        raise ValueError(f"unknown question family {family!r}; known: {sorted(FAMILIES)}")
    if level not in (1, 2, 3):
        raise ValueError(f"level must be 1, 2 or 3, got {level!r}")
    text, answer, step = FAMILIES[family](rng, level, held_out)
    return Question(text, str(answer), step)


def reply(question: Question) -> str:
    """The Agent's taught reply: the worked step, then the box."""
    return f"{question.step}, so \\boxed{{{question.answer}}}"


def observation(question: Question, instruction: str = REFERENCE_INSTRUCTION) -> str:
    return f"{question.text} {instruction}"


# --- the families as environments --------------------------------------------------------------


def question_env(family: str, level: int | None = None) -> str:
    """A compact environment (`QuestionEnv`) whose questions are `family`'s, drawn from the
    episode's seed at the environment's difficulty (its constructor's default `level`; None:
    the scaffold's): the family's own source runs in the sandbox, so the pool's question
    environments ask what the warm start taught."""
    source = inspect.getsource(FAMILIES[family])
    name = "".join(part.title() for part in family.split("_")) + "QuestionEnv"
    init = (
        ""
        if level is None
        else f"    def __init__(self, max_turns=25, difficulty={level}):\n"
        "        super().__init__(max_turns=max_turns, difficulty=difficulty)\n\n"
    )
    return (
        f"WORDS = {WORDS!r}\n\n\n{source}\n\n"
        f"class {name}(QuestionEnv):\n"
        # the module's old name, kept: another would change every such program's bytes
        f'    """{family.replace("_", " ").capitalize()} questions (spade.questions)."""\n\n'
        f"{init}"
        "    def generate(self, rng):\n"
        f"        question, answer, _ = {family}(rng, self.difficulty)\n"
        "        return question, answer\n"
    )


_FIXED = '''import re


class {name}:
    """One question, answered as \\\\boxed{{answer}} (the paper reference's one-question form)."""

    def __init__(self, max_turns=25, **kwargs):
        self.max_turns = max_turns
        self.done = False

    def reset(self, seed=None):
        self.done = False
        return {observation!r}, {{}}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {{}}
        self.done = True
        match = re.search(r"\\\\boxed\\{{([^{{}}]*)\\}}", str(action))
        given = match.group(1).strip().lower() if match else ""
        expected = {answer!r}.lower()
        try:
            correct = abs(float(given) - float(expected)) < 1e-6
        except ValueError:
            correct = given == expected
        if correct:
            return "Correct!", 1.0, True, False, {{}}
        return "Wrong.", 0.0, True, False, {{}}

    def solution(self):
        return "\\\\boxed{{" + {answer!r} + "}}"
'''


def fixed_question_env(question: Question, instruction: str, name: str = "QuestionEnv") -> str:
    """A one-question environment written as the paper's reference writes one (a plain class,
    no scaffold): the fixed question and `instruction`, one reply, `\\boxed{}` compared
    case-insensitively or as a number."""
    if not name.endswith("Env"):
        raise ValueError(f"an environment class name ends in 'Env', got {name!r}")
    return _FIXED.format(
        name=name, observation=observation(question, instruction), answer=question.answer
    )
