"""The validator's probe policies: replies that know nothing of the task.

An environment a probe wins often teaches nothing, and a Designer rewarded for it learns to write
more. Three kinds, each `seed -> ReplyFn`:

- **blind** (`blind_probes`): the empty reply, constant replies (`\\boxed{}`, `\\boxed{1}`, ...),
  replies drawn at random from a small vocabulary, and a spray that tries a different reply every
  turn. None reads the observation; the validator holds them to `max_probe_win_rate`.
- **copy** (`copy_probes`): reply with a token the environment itself showed, chosen by position
  among the distinct numbers or words of the *current* observation (the first number, the last
  word, ...). One rule per position, applied every turn, so a question that prints its answer and
  feedback that names the secret and lets the agent try again are both found. An honest question
  may name its options ("Which is larger, 55 or 25?", "even or odd"): a fixed position then wins
  about half the time when the options are shuffled, so copy rules are held to the higher
  `max_copy_win_rate`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from spade.envs.episode import ReplyFn
from spade.types import TOOL

RANDOM_VOCAB = (
    [str(i) for i in range(-1, 21)]
    + ["100"]
    + list("ABCDE")
    + "yes no true false up down left right north south east west wait stop buy sell".split()
    + [f"{a} {b}" for a in range(3) for b in range(3)]
    + [f"{a},{b}" for a in range(3) for b in range(3)]
)
GAME_CONSTANTS = (
    "\\boxed{}",
    "\\boxed{1}",
    "\\boxed{test}",
    "\\boxed{42}",
    "\\boxed{0}",
    "\\boxed{A}",
)
TOOL_CONSTANTS = (
    "<answer>0</answer>",
    "<answer>done</answer>",
    "<answer>yes</answer>",
    "<answer>1</answer>",
)
COPY_POSITIONS = 6
"""Copy rules per token type: the first 6 and the last 6 distinct tokens of the observation."""

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_WORD = re.compile(r"[^\W\d_]+")
_MARKUP = re.compile(r"\\boxed\{answer\}|\\boxed|<answer>|</answer>")


def _wrap(kind: str) -> Callable[[str], str]:
    return (lambda x: f"<answer>{x}</answer>") if kind == TOOL else (lambda x: f"\\boxed{{{x}}}")


def blind_probes(kind: str) -> dict[str, Callable[[int], ReplyFn]]:
    """Probe name -> (seed -> policy). Random probes draw from `random.Random(seed)` only."""
    wrap = _wrap(kind)
    probes: dict[str, Callable[[int], ReplyFn]] = {"empty": lambda _seed: lambda t, o: ""}
    for const in TOOL_CONSTANTS if kind == TOOL else GAME_CONSTANTS:
        probes[f"constant {const}"] = (lambda c: lambda _seed: lambda t, o: c)(const)

    def random_policy(seed: int) -> ReplyFn:
        rng = random.Random(10_007 * seed + 1)
        return lambda t, o: wrap(rng.choice(RANDOM_VOCAB))

    def spray(seed: int) -> ReplyFn:
        start = 7 * seed
        return lambda t, o: wrap(RANDOM_VOCAB[(start + t) % len(RANDOM_VOCAB)])

    probes["random"] = random_policy
    probes["spray"] = spray
    return probes


def tokens(observation: str, kind: str) -> list[str]:
    """The distinct numbers (`kind="number"`) or words (`"word"`) of an observation, in order of
    first appearance; the answer instruction's own markup (`\\boxed{answer}`) is not a token."""
    text = _MARKUP.sub(" ", observation)
    found = (_NUMBER if kind == "number" else _WORD).findall(text)
    return list(dict.fromkeys(found))


def copy_probes(kind: str) -> dict[str, Callable[[int], ReplyFn]]:
    """Probe name -> (seed -> policy) for every copy rule: `copy number 1` replies with the first
    distinct number of each observation, `copy word -1` with the last distinct word, and so on.
    A rule with no token at its position replies with nothing (`\\boxed{}`)."""
    wrap = _wrap(kind)
    probes: dict[str, Callable[[int], ReplyFn]] = {}
    positions = [*range(COPY_POSITIONS), *range(-COPY_POSITIONS, 0)]
    for token_kind in ("number", "word"):
        for i in positions:
            label = i + 1 if i >= 0 else i

            def rule(_seed: int, token_kind: str = token_kind, i: int = i) -> ReplyFn:
                def policy(_t: int, observation: str) -> str:
                    found = tokens(observation, token_kind)
                    return wrap(found[i] if -len(found) <= i < len(found) else "")

                return policy

            probes[f"copy {token_kind} {label}"] = rule
    return probes
