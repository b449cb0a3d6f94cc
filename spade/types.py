"""Frozen records that cross stage boundaries: programs, verdicts, turns and episodes; and the
names of values that travel as strings (environment kinds, program forms, win-rate bands).

Everything here is plain data (str, numbers, tuples, dicts of JSON values): results that come
out of the sandbox are copied into these records after the supervisor has checked them.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

EnvKind = Literal["game", "tool"]
"""What an environment is: a text game (the action is the first `\\boxed{}`) or a tool-use task
(tool calls and an `<answer>`)."""
GAME: EnvKind = "game"
TOOL: EnvKind = "tool"

Form = Literal["full", "compact"]
"""How a game program is written: a whole environment file (the contract, the paper's) or one
short subclass of a scaffold of `spade/sandbox/scaffolds.py` (what the embedded model learns)."""
FULL: Form = "full"
COMPACT: Form = "compact"

Band = Literal["frontier", "mastered", "out_of_reach"]
"""Where an environment's plain win rate w lies: frontier 0.2 <= w <= 0.8, mastered above, out of
reach below (`spade.envs.pool.Pool.record_bands`)."""
FRONTIER_BAND: Band = "frontier"
BANDS: tuple[Band, ...] = (FRONTIER_BAND, "mastered", "out_of_reach")
"""The bands in the order reports list them."""

# The reference writes slugs as `skill.lower().replace(" ", "_")`: hyphens stay
# (`game_00000_002_multi-step_workflows.py`).
REFERENCE_NAME = re.compile(r"^game_\d+_\d+_(?P<slug>[a-z0-9_\-]+)\.py$")

GAME_SKILLS = (
    "Mathematical Reasoning",
    "Logical Deduction",
    "Spatial Reasoning",
    "Pattern Recognition",
    "Optimization",
    "Causal Inference",
)
TOOL_SKILLS = (
    "API Orchestration",
    "Data Retrieval",
    "State Modification",
    "Error Recovery",
    "Tool Selection",
    "Multi-Step Workflows",
)


def skill_slug(skill: str) -> str:
    return skill.strip().lower().replace(" ", "_").replace("-", "_")


def skill_from_slug(slug: str) -> str:
    """A known skill from our slug or the reference's (`multi-step_workflows`), else a title."""
    for skill in GAME_SKILLS + TOOL_SKILLS:
        if skill_slug(skill) == skill_slug(slug):
            return skill
    return slug.replace("_", " ").title()


def normalise_code(code: str) -> str:
    """Line endings and trailing whitespace do not change an environment's identity."""
    lines = code.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"


def env_id_of(code: str) -> str:
    return hashlib.sha256(normalise_code(code).encode("utf-8", "surrogatepass")).hexdigest()


def parse_header(code: str) -> tuple[str, dict[str, str]]:
    """(one-line description, {key: value}) from the module docstring, without running code.

    A file without one (a compact program is often just a class) is described by the docstring
    of its first top-level class whose name ends in `Env`.
    """
    try:
        with warnings.catch_warnings():  # invalid escape sequences in the program
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "", {}
    doc = ast.get_docstring(tree)
    if doc is None:
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name.endswith("Env")]
        doc = next((d for c in classes if (d := ast.get_docstring(c))), None)
    doc = doc or ""
    lines = doc.strip().splitlines()
    meta: dict[str, str] = {}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep and key.strip() and " " not in key.strip():
            meta[key.strip().lower()] = value.strip()
    return (lines[0].strip() if lines else ""), meta


@dataclasses.dataclass(frozen=True)
class Program:
    """One environment program: its code plus what is known about it without running it."""

    code: str
    hint: str = ""
    skill: str = ""
    description: str = ""
    metadata: Mapping[str, str] = dataclasses.field(default_factory=dict)
    source: str = ""
    """Where it came from: a file path, or provenance such as `design:iter3/7`."""

    @property
    def env_id(self) -> str:
        return env_id_of(self.code)

    @classmethod
    def from_code(
        cls, code: str, *, source: str = "", hint: str | None = None, skill: str | None = None
    ) -> Program:
        description, meta = parse_header(code)
        if skill is None:
            skill = meta.get("skill", "")
            match = REFERENCE_NAME.match(Path(source).name) if source else None
            if not skill and match:
                skill = skill_from_slug(match.group("slug"))
        return cls(
            code=code,
            hint=meta.get("hint", "") if hint is None else hint,
            skill=skill,
            description=description,
            metadata=meta,
            source=source,
        )

    @classmethod
    def from_file(cls, path: str | Path) -> Program:
        path = Path(path)
        return cls.from_code(path.read_text(encoding="utf-8", errors="replace"), source=str(path))

    def difficulty_levels(self) -> tuple[int, ...]:
        """Declared `difficulty: 1-3` levels; () when the program declares none."""
        match = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", self.metadata.get("difficulty", ""))
        if not match:
            return ()
        lo, hi = int(match.group(1)), int(match.group(2))
        return tuple(range(lo, hi + 1)) if 0 <= lo <= hi <= lo + 10 else ()


@dataclasses.dataclass(frozen=True)
class CheckFailure:
    check: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The validator's decision on one program, with every failed check and its reason."""

    env_id: str
    admitted: bool
    failures: tuple[CheckFailure, ...] = ()
    stats: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "admitted": self.admitted,
            "failures": [dataclasses.asdict(f) for f in self.failures],
            "stats": dict(self.stats),
        }


@dataclasses.dataclass(frozen=True)
class Turn:
    reply: str
    """What the agent wrote."""
    action: str
    """What the environment received (the re-wrapped `\\boxed{}` for games)."""
    observation: str
    reward: float
    terminated: bool
    truncated: bool


@dataclasses.dataclass(frozen=True)
class Episode:
    env_id: str
    seed: int | None
    first_observation: str
    turns: tuple[Turn, ...]
    terminated: bool
    truncated: bool
    """True when the environment truncated or the runtime's turn cap ended the episode."""

    @property
    def return_(self) -> float:
        return episode_return(self)

    @property
    def won(self) -> bool:
        return self.return_ > 0

    def transcript(self) -> list[Any]:
        """Plain data for comparisons (determinism check) and storage."""
        return [self.first_observation] + [
            [t.action, t.observation, t.reward, t.terminated, t.truncated] for t in self.turns
        ]


def episode_return(episode: Episode) -> float:
    """Outcome-only return: the last reward clipped to [-1, 1] if the episode terminated, else 0."""
    if not episode.terminated or not episode.turns:
        return 0.0
    return max(-1.0, min(1.0, episode.turns[-1].reward))
