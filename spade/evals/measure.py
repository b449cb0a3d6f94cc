"""Measure a (warm-started) model in both roles, as `spade bootstrap` reports it.

- Designer: one batched design call over the game skills with the loop's own Designer prompt
  and the `tiny-cpu` recipe's Designer settings (`TINY_CPU.design`: temperature, reply length,
  prompt budget, form; `spade design` uses the same), a random grounding document each, every
  reply through the real validator with the bundled seeds as the duplicate pool; how many are
  near-duplicates of a warm-start training program, and which form each uses;
- Agent: the paired evaluation sets (`spade.evals.sets`: near, fresh renders of the trained
  question families; far, held-out families and reasoning-gym level-0 items), greedy, as
  `spade train` evaluates before training; the outcomes go to the same before-cache, so the
  runs that start from this model reuse them. Win rates with 95% intervals, per family.

Each phase prints a line when it starts and how long it took (`show`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from spade.backends.base import Models, SamplingParams
from spade.config import TINY_CPU, ModelConfig
from spade.envs import bundled
from spade.envs.checks import ValidatorConfig
from spade.envs.duplicates import shingles
from spade.envs.validate import validate_many
from spade.evals.winrate import result_of
from spade.prompts import PromptSettings
from spade.sandbox import Sandbox
from spade.selfplay.designer import DesignAttempt, design
from spade.types import COMPACT, FULL, GAME_SKILLS, Form, Program, Verdict
from spade.warmstart.data import training_programs


def form_of(code: str) -> Form:
    """`compact` for a subclass of a scaffold (`QuestionEnv` / `GameEnv`), else `full`."""
    from spade.sandbox.runtime import SCAFFOLD_NAMES

    return COMPACT if any(f"({name})" in code for name in SCAFFOLD_NAMES) else FULL


def nearest_training_similarity(code: str, training: Sequence[frozenset[Any]]) -> float:
    """The highest token 5-gram Jaccard similarity of `code` to a training program."""
    mine = shingles(code)
    return max((len(mine & t) / max(len(mine | t), 1) for t in training), default=0.0)


def _rate(result: Any) -> dict[str, Any]:
    low, high = result.overall.interval
    return {
        "episodes": result.overall.episodes,
        "win_rate": round(result.overall.rate, 3),
        "win_rate_95ci": [round(low, 3), round(high, 3)],
    }


def measure_model(
    path: str,
    *,
    seed: int = 0,
    designs_per_skill: int = 8,
    form: Form = TINY_CPU.design.form,
    temperature: float = TINY_CPU.design.temperature,
    max_tokens: int = TINY_CPU.design.max_tokens,
    prompt_budget_chars: int | None = TINY_CPU.design.prompt_budget_chars,
    keep_replies: bool = False,
    agent: bool = True,
    families: Sequence[str] | None = None,
    mini: int | None = None,
    count: int | None = None,
    show: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Designer: `designs_per_skill` designs per game skill (48 by default) at `temperature`,
    up to `max_tokens` each, under a `prompt_budget_chars` prompt in `form` (the defaults: the
    `tiny-cpu` recipe's Designer settings, as `spade train` and `spade design` with the
    embedded default use them), validated for real with the seeds as duplicate pool. Agent:
    the paired near and far sets as `spade train`'s "before" plays them (`TINY_CPU`: greedy,
    its reply length and turn cap), through the before-cache.
    `keep_replies` adds the Designer replies and verdicts to the report (for inspection);
    `agent=False` measures the Designer only; `families`, `mini` and `count` are the warm start's
    (`warm_start_examples`; None: its defaults), to spot copies of its training programs.
    `show` receives a line as each phase starts and ends (`spade bootstrap` prints them)."""
    from spade.selfplay.models import local_backend

    started = time.monotonic()
    policy = local_backend(ModelConfig(model=path), path, seed)
    skills = [s for s in GAME_SKILLS for _ in range(designs_per_skill)]
    show(f"measuring: {len(skills)} Designer replies (T={temperature}, <= {max_tokens} tokens)")
    attempts = design(
        policy,
        iteration=0,
        regen=0,
        skills_per_env=skills,
        rng=random.Random(seed),
        documents=bundled.grounding_documents(),
        params=SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed),
        settings=PromptSettings(budget_chars=prompt_budget_chars, form=form),
    )
    design_seconds = time.monotonic() - started
    programs = [a.program for a in attempts if a.program is not None]
    show(f"measuring: validating {len(programs)} programs ({design_seconds:.0f} s so far)")
    verdicts, before = _validate_and_play(policy, programs, agent, show)
    training = [shingles(code) for code in training_programs(seed, form, families, mini, count)]
    report = _designer_report(attempts, programs, verdicts, training)
    report["designer_seconds"] = round(design_seconds, 1)
    report["seconds"] = round(time.monotonic() - started, 1)
    if before is not None:
        report.update(_agent_report(before))
        report["seconds"] = round(time.monotonic() - started, 1)
    if keep_replies:
        report["replies"] = _replies(attempts, programs, verdicts)
    return report


def _validate_and_play(
    policy: Any, programs: Sequence[Program], agent: bool, show: Callable[[str], None]
) -> tuple[list[Verdict], dict[str, Any] | None]:
    """In one sandbox: every program through the real validator (the bundled seeds as the
    duplicate pool), then, with `agent`, the paired sets' "before" played by `policy` as
    `spade train` plays it (`TINY_CPU`, through the before-cache); None without `agent`."""
    from spade.evals import paired

    seeds = bundled.seed_programs()
    evals: dict[str, Any] = {}

    async def run() -> list[Verdict]:
        async with Sandbox() as sandbox:
            verdicts = await validate_many(programs, sandbox, ValidatorConfig(), pool=seeds)
            if agent:
                models = Models(policy, policy, policy, policy)
                loop = asyncio.get_running_loop()

                def run_async(coro: Any) -> Any:  # paired_phase's blocking interface
                    return asyncio.run_coroutine_threadsafe(coro, loop).result()

                evals["before"] = await asyncio.to_thread(
                    paired.paired_phase, "before", models, sandbox, TINY_CPU, run_async, show
                )
            return verdicts

    verdicts = asyncio.run(run())
    return verdicts, evals.get("before")


def _designer_report(
    attempts: Sequence[DesignAttempt],
    programs: Sequence[Program],
    verdicts: Sequence[Verdict],
    training: Sequence[frozenset[Any]],
) -> dict[str, Any]:
    """The Designer's numbers: attempts, extracted and admitted programs, the admitted ones by
    form and by similarity to the warm start's training programs (`training`, their shingles),
    and each rejected program's first failed check."""
    admitted = [p for p, v in zip(programs, verdicts) if v.admitted]
    near = [nearest_training_similarity(p.code, training) for p in admitted]
    failures: dict[str, int] = {}
    for v in verdicts:
        for f in v.failures[:1]:
            failures[f.check] = failures.get(f.check, 0) + 1
    forms: dict[str, int] = {}
    for p in admitted:
        forms[form_of(p.code)] = forms.get(form_of(p.code), 0) + 1
    return {
        "designer_attempts": len(attempts),
        "designer_extracted": len(programs),
        "designer_admitted": len(admitted),
        "designer_admitted_rate": round(len(admitted) / max(len(attempts), 1), 3),
        "admitted_by_form": forms,
        "admitted_near_duplicates_of_training": sum(s >= 0.9 for s in near),
        "admitted_exact_copies_of_training": sum(s >= 1.0 for s in near),
        "admitted_max_training_similarity": [round(s, 2) for s in sorted(near)],
        "designer_first_failures": failures,
    }


def _agent_report(before: dict[str, Any]) -> dict[str, Any]:
    """The Agent's numbers, `agent_<set>_set` per paired set: its win rate with a 95% interval,
    whether it came from the before-cache, wins by family, items per family and the outcome of
    every item (a string of 0/1 in set order, to pair two models on the same items)."""
    from spade.evals import paired

    report: dict[str, Any] = {}
    sets = {e.name: e for e in paired.paired_sets()}
    for name, record in before["sets"].items():
        evalset = sets[name]
        result = result_of(evalset.programs, [b == "1" for b in record["outcomes"]])
        report[f"agent_{name}_set"] = {
            **_rate(result),
            "cached": record["cached"],
            "by_family": {k.split(":", 1)[1]: v.wins for k, v in sorted(result.by_family.items())},
            "per_family": len(next(iter(evalset.families.values()))),
            "outcomes": record["outcomes"],
        }
    return report


def _replies(
    attempts: Sequence[DesignAttempt], programs: Sequence[Program], verdicts: Sequence[Verdict]
) -> list[dict[str, Any]]:
    """Each Designer reply with its skill, text, extraction error and its program's failures
    (None when no program was extracted), for `keep_replies`."""
    by_id = {p.env_id: v for p, v in zip(programs, verdicts)}
    return [
        {
            "skill": a.skill,
            "text": a.completion.text,
            "error": a.error,
            "failures": None
            if a.program is None
            else [[f.check, f.reason] for f in by_id[a.program.env_id].failures],
        }
        for a in attempts
    ]
