"""`spade design`: synthesise and validate a pool of environments with any backend (no
training), round after round until enough are admitted.

Imported only when a model command runs (the local backend pulls in torch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from spade.backends.base import SamplingParams
from spade.cli.eval_command import console, policy_for
from spade.config import TINY_CPU, DesignConfig
from spade.envs import bundled
from spade.prompts import PromptSettings
from spade.sandbox.standalone import standalone
from spade.types import GAME_SKILLS, Form, Program, skill_slug

if TYPE_CHECKING:
    from spade.selfplay.admission import DesignRequest, Outcome
    from spade.selfplay.designer import SkillRotation

OTHER_MODEL_DESIGN = DesignConfig(max_tokens=1536, temperature=1.0, prompt_budget_chars=3000)
"""`spade design`'s Designer settings for a model other than the embedded default: room for a
longer program, sampled at the paper's temperature, with a longer prompt."""


def design_defaults(model: str, openai_base_url: str | None) -> DesignConfig:
    """The Designer settings `spade design` starts from: the `tiny-cpu` recipe's with the embedded
    default (what its warm start was taught, and what `spade train` and `spade bootstrap`'s
    measurement use), `OTHER_MODEL_DESIGN` with any other model."""
    if model == TINY_CPU.model.model and openai_base_url is None:
        return TINY_CPU.design
    return OTHER_MODEL_DESIGN


def design_cmd(
    out: Path,
    /,
    count: int = 12,
    skills: tuple[str, ...] = GAME_SKILLS,
    model: str = "smollm2",
    openai_base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    batch: int = 12,
    max_rounds: int = 10,
    max_tokens: int | None = None,
    temperature: float | None = None,
    prompt_budget_chars: int | None = None,
    form: Form | None = None,
    seed: int = 0,
    sandbox: Literal["local", "ray"] = "local",
    format: Literal["reference", "openenv", "verifiers", "gem"] = "reference",
) -> int:
    """Synthesise and validate a pool of environments with any backend (no training).

    Admitted environments are written to OUT as reference-format files
    (`game_{round:05d}_{index:03d}_{skill}.py`; a compact file with its base class inlined, so
    it runs on the reference's runtime too), and every attempt, with its verdict and hint, to
    OUT/pool.sqlite and OUT/attempts.jsonl.

    Args:
        out: Output directory (created).
        count: Stop once this many environments are admitted.
        skills: Skills to design for (rotating, 3 at a time).
        model: `smollm2` (the embedded default), `tiny-test`, a local checkpoint, a hub id, or
            the served model's name.
        openai_base_url: Design with an OpenAI-compatible server.
        api_key_env: Environment variable with the server's key.
        batch: Design attempts per round (one batched sampling call).
        max_rounds: Give up after this many rounds.
        max_tokens: Longest Designer reply (default: the `tiny-cpu` recipe's with the embedded
            default model, as `spade train` samples it; else 1536).
        temperature: Sampling temperature (default: the recipe's with the embedded default
            model; else 1.0).
        prompt_budget_chars: Designer prompt cap (default: the recipe's with the embedded
            default model; else 3000); 0: no cap, the paper's full prompt.
        form: How games are asked for: `compact` (a subclass of the runtime's `QuestionEnv` /
            `GameEnv`) or `full` (the whole contract); default: the recipe's (compact).
        seed: Seeds every random choice.
        sandbox: Where candidates are validated: `local` or `ray` (see `spade eval --help`).
        format: Also package the admitted environments as OUT/<format> for another trainer:
            `openenv`, `verifiers` or `gem` (as `spade pool export --format`; docs/exports.md).
    """
    from spade.selfplay.designer import SkillRotation

    defaults = design_defaults(model, openai_base_url)
    out.mkdir(parents=True, exist_ok=True)
    policy = policy_for(model, None, openai_base_url, api_key_env, seed)
    request = _request(defaults, max_tokens, temperature, prompt_budget_chars, form)
    rotation = SkillRotation(skills, min(3, len(skills)))
    programs = _design_rounds(
        out, policy, request, rotation, count, batch, max_rounds, seed, sandbox
    )
    console.print(f"{len(programs)} environments admitted into {out}")
    if format != "reference" and programs:
        from spade.envs.bundle import package_name
        from spade.exports import export

        export(programs, out / format, format, package_name(out))
        console.print(f"packaged for {format} in {out / format} (docs/exports.md)")
    return 0 if len(programs) >= count else 1


def _request(
    defaults: DesignConfig,
    max_tokens: int | None,
    temperature: float | None,
    prompt_budget_chars: int | None,
    form: Form | None,
) -> DesignRequest:
    """What every round asks, but for its number, skills, rng and limit: the flags given, the
    `defaults` for the others."""
    from spade.selfplay.admission import DesignRequest

    budget = defaults.prompt_budget_chars if prompt_budget_chars is None else prompt_budget_chars
    settings = PromptSettings(
        budget_chars=budget or None,  # 0: no cap
        form=defaults.form if form is None else form,
    )
    return DesignRequest(
        iteration=0,
        regen=0,
        skills=(),
        rng=random.Random(),
        params=SamplingParams(
            max_tokens=defaults.max_tokens if max_tokens is None else max_tokens,
            temperature=defaults.temperature if temperature is None else temperature,
        ),
        documents=bundled.grounding_documents(),
        prompt_settings=settings,
    )


def _design_rounds(
    out: Path,
    policy: Any,
    request: DesignRequest,
    rotation: SkillRotation,
    count: int,
    batch: int,
    max_rounds: int,
    seed: int,
    sandbox: Literal["local", "ray"],
) -> list[Program]:
    """Round after round of `batch` attempts (a seeded rng per round) until `count` programs
    are admitted or `max_rounds` have run; the admitted programs, in order."""
    from rich.progress import Progress

    from spade.envs.pool import Pool
    from spade.sandbox import make_sandbox
    from spade.selfplay.admission import design_and_admit

    programs: list[Program] = []
    with Pool(out / "pool.sqlite") as pool, Progress(console=console) as progress:
        task = progress.add_task("designing", total=count)
        loop = asyncio.new_event_loop()
        envs = make_sandbox(sandbox)
        loop.run_until_complete(envs.start())
        try:
            for rnd in range(max_rounds):
                rng = random.Random(f"{seed}/{rnd}")
                this_round = dataclasses.replace(
                    request,
                    iteration=rnd,
                    regen=rnd,
                    skills=tuple(rotation.skills_for(rnd, batch)),
                    rng=rng,
                    params=dataclasses.replace(request.params, seed=rng.randrange(2**31)),
                    limit=count - len(programs),
                    exemplars_for=_exemplars(pool, rng),
                )
                outcomes = design_and_admit(policy, envs, pool, loop.run_until_complete, this_round)
                for program in _write_round(out, rnd, outcomes):
                    programs.append(program)
                    progress.advance(task)
                if len(programs) >= count:
                    break
        finally:
            loop.run_until_complete(envs.aclose())
            loop.close()
    return programs


def _exemplars(pool: Any, rng: random.Random) -> Any:
    return lambda skill: [m.program for m in pool.exemplars(skill, rng, k=10)]


def _write_round(out: Path, rnd: int, outcomes: Sequence[Outcome]) -> list[Program]:
    """Each admitted program of round `rnd` as a reference-format file in `out`, and every
    attempt as a line of attempts.jsonl; the admitted programs."""
    admitted = []
    with open(out / "attempts.jsonl", "a") as log:
        for o in outcomes:
            a = o.attempt
            if o.admitted and a.program is not None:
                name = f"game_{rnd:05d}_{a.attempt_index:03d}_{skill_slug(a.skill)}.py"
                (out / name).write_text(standalone(a.program.code))
                admitted.append(a.program)
            log.write(json.dumps(_attempt_line(rnd, o)) + "\n")
    return admitted


def _attempt_line(rnd: int, outcome: Outcome) -> dict[str, Any]:
    a = outcome.attempt
    return {
        "round": rnd,
        "skill": a.skill,
        "attempt": a.attempt_index,
        "admitted": outcome.admitted,
        "hint": a.program.hint if a.program else None,
        "error": a.error,
        "verdict": outcome.verdict.to_json() if outcome.verdict else None,
        "failures": [dataclasses.asdict(f) for f in outcome.failures],
    }
