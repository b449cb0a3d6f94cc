"""Design, validate, admit: the one path by which designed programs enter a pool.

    outcomes = design_and_admit(policy, sandbox, pool, run_async, request)
    admitted = [o.attempt.program for o in outcomes if o.admitted]

Used by the self-play loop (every regeneration) and by `spade design` (no training). Per round,
the Designer is asked for one environment per open slot (one batched sampling call), the replies
are validated together, and each attempt is matched to its own verdict by position (two attempts
with identical code get two verdicts: the first admitted, the second a duplicate). A slot whose
attempt failed is retried, up to `max_attempts` attempts per slot (the paper retries up to 5);
every attempt, failed or not, is recorded in the pool and returned, so the loop trains on all of
them.

With `training` (the loop: the warm start's Designer targets, `warm_start_programs`) each program
is first compared with the programs the model was taught to write, by the near-duplicate check's
measure; a copy is refused as `training_copy` without running it (ours: a memorised training
program is no new environment, and the Designer must get no reward for it). Every other attempt
with a program keeps its nearest similarity (`Outcome.training_similarity`), the loop's novelty.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spade.backends.base import Policy, SamplingParams
from spade.envs.checks import ValidatorConfig
from spade.envs.duplicates import shingles
from spade.envs.pool import Pool
from spade.envs.validate import validate_many
from spade.prompts import PAPER_PROMPT, PromptSettings
from spade.sandbox import SandboxAPI
from spade.selfplay.designer import DesignAttempt, NegativeExample, design
from spade.types import COMPACT, CheckFailure, Form, Program, Verdict
from spade.warmstart.data import training_programs

COUNT_REACHED = CheckFailure("count", "the requested number of environments was already admitted")
POOL_DUPLICATE = CheckFailure("duplicate", "identical to a pool environment")
TRAINING_COPY = "training_copy"
"""The check name of a design refused as a copy of a training program."""


@dataclasses.dataclass(frozen=True)
class TrainingPrograms:
    """Programs a model was taught to write, as the near-duplicate check's token 5-gram sets
    (`spade.envs.duplicates.shingles`, literals normalised: a copy with other numbers is still
    one)."""

    shingles: tuple[frozenset[tuple[str, ...]], ...]

    def nearest(self, code: str) -> float:
        """The highest Jaccard similarity of `code` to a training program (0.0 with none), as
        `spade.envs.duplicates.check_duplicates` measures it."""
        mine, best = shingles(code), 0.0
        for theirs in self.shingles:
            common = len(mine & theirs)  # |A | B| = |A| + |B| - |A & B|: no union set built
            best = max(best, common / max(len(mine) + len(theirs) - common, 1))
        return best


@functools.cache
def warm_start_programs(form: Form = COMPACT) -> TrainingPrograms:
    """The Designer targets of the default warm start of `form`
    (`spade.warmstart.data.training_programs`), computed once per process: rendering is
    deterministic and cheap (~0.5 s for the compact form's 1,500 programs, ~4 s for the full
    form's 3,000); the warm start's Agent replays, which run subprocesses, are not needed."""
    return TrainingPrograms(tuple(shingles(code) for code in training_programs(form=form)))


@dataclasses.dataclass(frozen=True)
class DesignRequest:
    """What one regeneration asks of the Designer, and how admission treats the replies."""

    iteration: int
    regen: int
    skills: tuple[str, ...]
    """One slot per entry: the skill of each requested environment."""
    rng: random.Random
    params: SamplingParams
    validator: ValidatorConfig = ValidatorConfig()
    max_attempts: int = 1
    """Attempts per slot: a slot whose attempt fails is asked again, up to this many times."""
    limit: int | None = None
    """Admit at most this many programs (later valid ones are recorded as not admitted)."""
    failed_reward: float | None = None
    """Reward recorded at once with each failed attempt (the loop: INVALID_DESIGN_REWARD)."""
    documents: Sequence[Mapping[str, Any]] = ()
    exemplars_for: Callable[[str], Sequence[Program]] | None = None
    negative_for: Callable[[str], NegativeExample | None] | None = None
    prompt_settings: PromptSettings = PAPER_PROMPT
    """The run's Designer prompt settings (difficulty word, budget, form, separate hint call)."""
    training: TrainingPrograms | None = None
    """Programs the model was trained to write: a design at or above the validator's
    near-duplicate threshold to one of them (an exact copy always) is refused as
    `training_copy`, unvalidated. None: no such check."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One design attempt and what admission made of it."""

    attempt: DesignAttempt
    verdict: Verdict | None
    """None when the reply held no program (see `failures`)."""
    admitted: bool
    failures: tuple[CheckFailure, ...]
    training_similarity: float | None = None
    """Similarity to the nearest program of `DesignRequest.training` (None without a program
    or without a training set); 1 minus it is the design's novelty."""

    @property
    def env_id(self) -> str | None:
        """The admitted program's env_id; None unless admitted."""
        return self.attempt.program.env_id if self.admitted and self.attempt.program else None


def _round_params(params: SamplingParams, round_index: int) -> SamplingParams:
    """Round 0 keeps the seed; a retry gets its own, so a seeded sampler can answer otherwise."""
    if round_index == 0 or params.seed is None:
        return params
    return dataclasses.replace(
        params, seed=random.Random(f"{params.seed}/retry/{round_index}").randrange(2**31)
    )


def design_and_admit(
    policy: Policy,
    sandbox: SandboxAPI,
    pool: Pool,
    run_async: Callable[[Any], Any],
    request: DesignRequest,
) -> list[Outcome]:
    """Every attempt of every round, in order (attempt_index = position in the list)."""
    outcomes: list[Outcome] = []
    slots = list(request.skills)
    for round_index in range(request.max_attempts):
        if not slots or _count(outcomes) >= _limit(request):
            break
        attempts = design(
            policy,
            iteration=request.iteration,
            regen=request.regen,
            skills_per_env=slots,
            rng=request.rng,
            params=_round_params(request.params, round_index),
            settings=request.prompt_settings,
            documents=request.documents,
            exemplars_for=request.exemplars_for or (lambda s: ()),
            negative_for=request.negative_for or (lambda s: None),
            first_attempt=len(outcomes),
        )
        similarities = [_training_similarity(a, request) for a in attempts]
        verdicts = _verdicts(attempts, similarities, sandbox, pool, run_async, request.validator)
        retry: list[str] = []
        with pool.transaction():
            for a, verdict, similarity in zip(attempts, verdicts, similarities):
                full = _count(outcomes) >= _limit(request)
                outcome = _admit(a, verdict, similarity, pool, request, full)
                outcomes.append(outcome)
                if not outcome.admitted:
                    retry.append(a.skill)
        slots = retry
    return outcomes


def _count(outcomes: Sequence[Outcome]) -> int:
    return sum(o.admitted for o in outcomes)


def _limit(request: DesignRequest) -> float:
    return float("inf") if request.limit is None else request.limit


def _training_similarity(a: DesignAttempt, request: DesignRequest) -> float | None:
    if a.program is None or request.training is None:
        return None
    return request.training.nearest(a.program.code)


def _is_copy(similarity: float | None, validator: ValidatorConfig) -> bool:
    # an exact copy (1.0) even where the threshold lets near-duplicates in (tests use 1.01)
    return similarity is not None and similarity >= min(validator.near_duplicate_threshold, 1.0)


def _verdicts(
    attempts: Sequence[DesignAttempt],
    similarities: Sequence[float | None],
    sandbox: SandboxAPI,
    pool: Pool,
    run_async: Callable[[Any], Any],
    validator: ValidatorConfig,
) -> list[Verdict | None]:
    """The verdict of each attempt, by position (None where the reply held no program); a copy
    of a training program gets its `training_copy` failure without being run."""
    by_index: dict[int, Verdict] = {}
    indexed = []
    for i, (a, similarity) in enumerate(zip(attempts, similarities)):
        if a.program is None:
            continue
        if _is_copy(similarity, validator):
            reason = f"{similarity:.2f} token similarity to a warm-start training program"
            failure = CheckFailure(TRAINING_COPY, reason)
            by_index[i] = Verdict(a.program.env_id, False, (failure,))
        else:
            indexed.append((i, a.program))
    verdicts = run_async(
        validate_many([p for _, p in indexed], sandbox, validator, pool.admitted())
    )
    by_index.update({i: v for (i, _), v in zip(indexed, verdicts)})
    return [by_index.get(i) for i in range(len(attempts))]


def _admit(
    a: DesignAttempt,
    verdict: Verdict | None,
    similarity: float | None,
    pool: Pool,
    request: DesignRequest,
    full: bool,
) -> Outcome:
    """Admit one attempt if its verdict allows, and record it in the pool either way."""
    if a.program is None or verdict is None:
        failures: tuple[CheckFailure, ...] = (CheckFailure("design", a.error or "no program"),)
    elif not verdict.admitted:
        failures = tuple(verdict.failures)
    elif full:
        failures = (COUNT_REACHED,)
    else:
        provenance: dict[str, Any] = {
            "exemplars": list(a.exemplar_ids),
            "grounding": a.document_title,
            "regen": a.regen,
            "attempt": a.attempt_index,
        }
        if similarity is not None:
            provenance["training_similarity"] = round(similarity, 3)
        added = pool.add_program(a.program, verdict, a.iteration, provenance)
        failures = () if added else (POOL_DUPLICATE,)
    admitted = not failures
    pool.record_attempt(
        a.iteration,
        a.regen,
        a.skill,
        a.attempt_index,
        env_id=a.program.env_id if admitted and a.program else None,
        admitted=admitted,
        failures=failures,
        reward=None if admitted else request.failed_reward,
    )
    return Outcome(a, verdict, admitted, failures, similarity)
