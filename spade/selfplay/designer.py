"""The Designer stage: Policy -> design attempts (code + hint). It never executes generated code.

    rotation = SkillRotation(GAME_SKILLS, active=3)
    attempts = design(policy, iteration=it, regen=r, rng=random.Random(seed),
                      skills_per_env=rotation.skills_for(r, 24), documents=docs,
                      params=SamplingParams(max_tokens=4096))
    programs = [a.program for a in attempts if a.program is not None]   # -> the validator

One prompt per requested environment, all sampled in ONE batched `policy.sample` call; each reply
is reduced to its first ```python block and its `HINT:` line (`extract_design`). Every attempt is
returned, failed or not, with its prompt and completion (token ids and behaviour logprobs): a
failed attempt is a Designer training sample with the lowest reward (SPADE.md section 3, Ours).
Garbage replies never raise; they give an attempt with `program=None` and the reason, or a
program the validator will reject with its own reason (syntax errors are the validator's job).

Paper mode (`PromptSettings.separate_hint`): the code prompt asks for the code only, and a
second batched call shows the policy each extracted program and asks for its hint. The Designer's
training sample is still the code call's prompt + reply (`DesignAttempt.completion`); the hint
call's completion is kept on the attempt (`hint_completion`) but is not trained: the regret reward
judges the environment and its hint together, and nothing in the loop yet assigns the hint call
its own credit.

Randomness (which grounding document, the exemplar order) comes only from the `rng` passed in,
in a fixed order: per requested environment, `rng.choice(documents)` then `rng.shuffle` of that
environment's exemplars.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spade.backends.base import Completion, Policy, Prompt, SamplingParams
from spade.prompts import (
    MAX_HINT_CHARS,
    PAPER_PROMPT,
    DesignerPrompt,
    PromptSettings,
    designer_prompt,
    hint_messages,
)
from spade.types import Program, skill_slug

MAX_CODE_CHARS = 200_000
"""Longer code blocks are refused here (the validator's own size limit is lower; this one only
keeps a runaway reply from being parsed at all)."""
HINT_MAX_TOKENS = 256
"""Token cap of the separate hint call (600 characters is ~150-200 tokens)."""

PYTHON_TAGS = frozenset({"python", "py", "python3"})
_FENCE = re.compile(r"^\s*```\s*([\w+.-]*)\s*$")
_HINT = re.compile(r"^\s*(?:\*\*|__)?hint(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.*)$", re.IGNORECASE)

NegativeExample = tuple[Program, str]


# --- extraction ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Extraction:
    """What a Designer reply holds: code and hint, or why not."""

    code: str | None
    hint: str
    error: str | None
    """None when both code and hint (if required) were found."""
    cut_off: bool = False
    """The reply ended inside its code block (no closing fence)."""

    @property
    def ok(self) -> bool:
        return self.error is None


def _hint_after(lines: Sequence[str]) -> tuple[str, str | None]:
    """(hint, error) from the first `HINT:` line and its continuation lines.

    The hint runs to a blank line, a fence line or the end; an inline fence is an error (the hint
    gate: a hint must not carry code).
    """
    for i, line in enumerate(lines):
        match = _HINT.match(line)
        if match is None:
            continue
        parts = [match.group(1).strip()]
        for more in lines[i + 1 :]:
            if not more.strip() or _FENCE.match(more):
                break
            parts.append(more.strip())
        hint = "\n".join(p for p in parts if p).strip()
        if "```" in hint:
            return "", "hint contains a code fence"
        if not hint:
            return "", "empty hint"
        return hint[:MAX_HINT_CHARS].rstrip(), None
    return "", "empty hint"


def extract_design(reply: str, *, require_hint: bool = True) -> Extraction:
    """The first Python code block of a reply and the `HINT:` line after it.

    A block is a fence line ```python (or ```py / ```python3), or an untagged ``` fence whose
    body contains `class`; it ends at the next line that is only ```. Blocks in other languages
    are skipped. Reasons: "no code block", "reply cut off (no closing fence)", "empty code block",
    "code block too long (...)", "empty hint", "hint contains a code fence".
    """
    lines = reply.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        tag = opening.group(1).lower()
        close = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        body_end = len(lines) if close is None else close
        body = "\n".join(lines[i + 1 : body_end])
        if tag in PYTHON_TAGS or (not tag and "class" in body):
            if close is None:
                return Extraction(None, "", "reply cut off (no closing fence)", cut_off=True)
            return _with_hint(body, lines[close + 1 :], require_hint)
        if close is None:
            break
        i = close + 1
    return Extraction(None, "", "no code block")


def _with_hint(body: str, rest: Sequence[str], require_hint: bool) -> Extraction:
    code = body.strip("\n")
    if not code.strip():
        return Extraction(None, "", "empty code block")
    if len(code) > MAX_CODE_CHARS:
        return Extraction(None, "", f"code block too long ({len(code)} > {MAX_CODE_CHARS} chars)")
    code += "\n"
    hint, error = _hint_after(rest)
    if not require_hint:
        return Extraction(code, hint, None)
    return Extraction(code, hint, error)


def extract_hint(reply: str) -> tuple[str, str | None]:
    """(hint, error) from a hint-call reply: its `HINT:` line, else the whole reply as the hint."""
    hint, error = _hint_after(reply.replace("\r\n", "\n").split("\n"))
    if error != "empty hint":
        return hint, error
    text = reply.strip()
    if "```" in text:
        return "", "hint contains a code fence"
    return (text[:MAX_HINT_CHARS].rstrip(), None) if text else ("", "empty hint")


# --- skills -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SkillRotation:
    """A window of `active` skills that moves on every regeneration (paper: 3 of 6).

    Regeneration r targets `skills[(r * active + j) % n]` for j < active, so with 6 skills and
    3 active, regenerations alternate between the first and last three, and every skill is
    covered within ceil(n / active) regenerations. A pure function of r: nothing to save.
    """

    skills: Sequence[str]
    active: int = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "skills", tuple(self.skills))
        if not self.skills:
            raise ValueError("SkillRotation needs at least one skill")
        if len(set(self.skills)) != len(self.skills):
            raise ValueError(f"duplicate skills: {self.skills}")
        if self.active < 1:
            raise ValueError(f"active must be >= 1, got {self.active}")

    def window(self, regen: int) -> tuple[str, ...]:
        """The active skills of regeneration `regen`."""
        if regen < 0:
            raise ValueError(f"regen must be >= 0, got {regen}")
        n = len(self.skills)
        k = min(self.active, n)
        return tuple(self.skills[(regen * k + j) % n] for j in range(k))

    def skills_for(self, regen: int, num_envs: int) -> list[str]:
        """The skill of each of `num_envs` environments: the window, round robin."""
        window = self.window(regen)
        return [window[i % len(window)] for i in range(num_envs)]


# --- design -------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DesignAttempt:
    """One Designer reply and what came of it; a training sample whether or not it succeeded."""

    iteration: int
    regen: int
    skill: str
    attempt_index: int
    prompt: Prompt
    completion: Completion
    """The code call's completion (token ids + behaviour logprobs): the Designer sample."""
    program: Program | None
    """None when extraction failed (see `error`); else to be validated."""
    error: str | None
    exemplar_ids: tuple[str, ...]
    """env_ids of the exemplars shown in the prompt."""
    document_title: str | None
    """Title of the grounding document shown (maybe cut to the budget), None if none."""
    hint_prompt: Prompt | None = None
    hint_completion: Completion | None = None
    """The separate hint call (paper mode) when it was made; not trained."""


def attempt_source(iteration: int, skill: str, attempt_index: int) -> str:
    return f"design:it{iteration}/{skill_slug(skill)}/{attempt_index}"


def _program(code: str, hint: str, skill: str, source: str) -> Program:
    try:
        return Program.from_code(code, source=source, hint=hint, skill=skill)
    except (RecursionError, MemoryError):
        # ast.parse (reading the docstring header) raises these, not SyntaxError, on deeply
        # nested garbage such as 3,000 unary minus signs; the validator reports why it fails.
        return Program(code=code, hint=hint, skill=skill, source=source)


def _no_exemplars(skill: str) -> Sequence[Program]:
    return ()


def _no_negative(skill: str) -> NegativeExample | None:
    return None


def _sample(policy: Policy, prompts: list[Prompt], params: SamplingParams) -> list[Completion]:
    completions = policy.sample(prompts, params)
    if len(completions) != len(prompts):
        raise ValueError(f"policy returned {len(completions)} completions for {len(prompts)}")
    return list(completions)


def design(
    policy: Policy,
    *,
    iteration: int,
    regen: int,
    skills_per_env: Sequence[str],
    rng: random.Random,
    params: SamplingParams,
    settings: PromptSettings = PAPER_PROMPT,
    documents: Sequence[Mapping[str, Any]] = (),
    exemplars_for: Callable[[str], Sequence[Program]] = _no_exemplars,
    negative_for: Callable[[str], NegativeExample | None] = _no_negative,
    first_attempt: int = 0,
) -> list[DesignAttempt]:
    """One design attempt per entry of `skills_per_env`, in order; see the module docstring.

    `settings`: the run's prompt settings (difficulty word, budget, form, separate hint call).
    `exemplars_for(skill)` may return more than `settings.max_exemplars` programs (for example the
    top 10 by regret): they are shuffled with `rng` and the first two shown, i.e. 2 sampled from
    them. Attempt i is numbered `first_attempt + i` (pass a running count when retrying within
    an iteration so sources stay unique; `spade.selfplay.admission` does). The separate hint call
    samples with `params` capped at `HINT_MAX_TOKENS` tokens.
    """
    if not skills_per_env:
        return []
    rendered = [
        _render(skill, rng, settings, documents, exemplars_for, negative_for)
        for skill in skills_per_env
    ]
    prompts = [Prompt.of(r.messages) for r in rendered]
    completions = _sample(policy, prompts, params)
    extractions = [extract_design(c.text, require_hint=settings.with_hint) for c in completions]
    hint_calls = _hint_calls(policy, extractions, params) if settings.separate_hint else {}

    attempts = []
    for i, (skill, r, prompt, completion, extraction) in enumerate(
        zip(skills_per_env, rendered, prompts, completions, extractions)
    ):
        index = first_attempt + i
        code, hint, error = extraction.code, extraction.hint, extraction.error
        if error is not None and completion.finish_reason == "length" and not extraction.cut_off:
            error += " (the reply reached max_tokens)"
        hint_prompt = hint_completion = None
        if i in hint_calls:
            hint_prompt, hint_completion = hint_calls[i]
            hint, hint_error = extract_hint(hint_completion.text)
            error = None if hint_error is None else f"hint call: {hint_error}"
        program = None
        if error is None and code is not None:
            program = _program(code, hint, skill, attempt_source(iteration, skill, index))
        attempts.append(
            DesignAttempt(
                iteration=iteration,
                regen=regen,
                skill=skill,
                attempt_index=index,
                prompt=prompt,
                completion=completion,
                program=program,
                error=error,
                exemplar_ids=tuple(p.env_id for p in r.exemplars),
                document_title=r.document_title,
                hint_prompt=hint_prompt,
                hint_completion=hint_completion,
            )
        )
    return attempts


def _render(
    skill: str,
    rng: random.Random,
    settings: PromptSettings,
    documents: Sequence[Mapping[str, Any]],
    exemplars_for: Callable[[str], Sequence[Program]],
    negative_for: Callable[[str], NegativeExample | None],
) -> DesignerPrompt:
    """One Designer prompt; draws from `rng` in a fixed order: the document, then the shuffle."""
    document = rng.choice(documents) if documents else None
    exemplars = list(exemplars_for(skill))
    rng.shuffle(exemplars)
    return designer_prompt(
        skill, settings, document, exemplars[: settings.max_exemplars], negative_for(skill)
    )


def _hint_calls(
    policy: Policy, extractions: Sequence[Extraction], params: SamplingParams
) -> dict[int, tuple[Prompt, Completion]]:
    """Paper mode: one batched hint call for the replies whose code was extracted, by index."""
    todo = [i for i, e in enumerate(extractions) if e.ok and e.code is not None]
    if not todo:
        return {}
    hint_params = dataclasses.replace(params, max_tokens=min(params.max_tokens, HINT_MAX_TOKENS))
    hint_prompts = [Prompt.of(hint_messages(extractions[i].code or "")) for i in todo]
    return dict(zip(todo, zip(hint_prompts, _sample(policy, hint_prompts, hint_params))))
