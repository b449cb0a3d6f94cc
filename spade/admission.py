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
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spade.backends.base import Policy, SamplingParams
from spade.designer import DesignAttempt, NegativeExample, design
from spade.pool import Pool
from spade.sandbox import SandboxAPI
from spade.types import CheckFailure, Program, Verdict
from spade.validate import ValidatorConfig, validate_many

COUNT_REACHED = CheckFailure("count", "the requested number of environments was already admitted")
POOL_DUPLICATE = CheckFailure("duplicate", "identical to a pool environment")


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
    difficulty_word: str = "medium"
    budget_chars: int | None = None
    separate_hint: bool = False
    form: str = "full"
    """How games are asked for: `spade.prompts.FORMS`."""

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
            documents=request.documents,
            exemplars_for=request.exemplars_for or (lambda s: ()),
            negative_for=request.negative_for or (lambda s: None),
            difficulty_word=request.difficulty_word,
            budget_chars=request.budget_chars,
            separate_hint=request.separate_hint,
            first_attempt=len(outcomes),
            form=request.form,
        )
        verdicts = _verdicts(attempts, sandbox, pool, run_async, request.validator)
        retry: list[str] = []
        with pool.transaction():
            for a, verdict in zip(attempts, verdicts):
                outcome = _admit(a, verdict, pool, request, _count(outcomes) >= _limit(request))
                outcomes.append(outcome)
                if not outcome.admitted:
                    retry.append(a.skill)
        slots = retry
    return outcomes


def _count(outcomes: Sequence[Outcome]) -> int:
    return sum(o.admitted for o in outcomes)


def _limit(request: DesignRequest) -> float:
    return float("inf") if request.limit is None else request.limit


def _verdicts(
    attempts: Sequence[DesignAttempt],
    sandbox: SandboxAPI,
    pool: Pool,
    run_async: Callable[[Any], Any],
    validator: ValidatorConfig,
) -> list[Verdict | None]:
    """The verdict of each attempt, by position (None where the reply held no program)."""
    indexed = [(i, a.program) for i, a in enumerate(attempts) if a.program is not None]
    verdicts = run_async(
        validate_many([p for _, p in indexed], sandbox, validator, pool.admitted())
    )
    by_index: dict[int, Verdict] = {i: v for (i, _), v in zip(indexed, verdicts)}
    return [by_index.get(i) for i in range(len(attempts))]


def _admit(
    a: DesignAttempt, verdict: Verdict | None, pool: Pool, request: DesignRequest, full: bool
) -> Outcome:
    """Admit one attempt if its verdict allows, and record it in the pool either way."""
    if a.program is None or verdict is None:
        failures: tuple[CheckFailure, ...] = (CheckFailure("design", a.error or "no program"),)
    elif not verdict.admitted:
        failures = tuple(verdict.failures)
    elif full:
        failures = (COUNT_REACHED,)
    else:
        provenance = {
            "exemplars": list(a.exemplar_ids),
            "grounding": a.document_title,
            "regen": a.regen,
            "attempt": a.attempt_index,
        }
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
    return Outcome(a, verdict, admitted, failures)
