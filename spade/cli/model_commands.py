"""The commands that use a model: `spade train | design | eval | bootstrap`.

Imported only when one of them runs (they pull in torch through the local backend).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro
from rich.console import Console
from rich.table import Table

from spade import config as config_io
from spade.backends.base import SamplingParams
from spade.config import RECIPES, TINY_CPU, DesignConfig, ModelConfig, TrainConfig, UsageError
from spade.envs import bundled
from spade.prompts import PromptSettings
from spade.sandbox.runtime import standalone
from spade.types import GAME_SKILLS, Program, skill_slug
from spade.warmstart.finetune import DEFAULT_STEPS

console = Console(highlight=False)


def train_main(argv: list[str]) -> int:
    """`spade train [--recipe NAME] [--resume RUN_DIR] [config overrides]`."""
    recipe, resume, rest = "tiny-cpu", None, []
    args = iter(argv)
    for arg in args:
        if arg == "--recipe" or arg.startswith("--recipe="):
            recipe = arg.split("=", 1)[1] if "=" in arg else next(args, "")
        elif arg == "--resume" or arg.startswith("--resume="):
            resume = arg.split("=", 1)[1] if "=" in arg else next(args, "")
        elif arg in ("--sandbox", "--sandbox=local", "--sandbox=ray"):
            rest += ["--sandbox-backend", arg.split("=", 1)[1] if "=" in arg else next(args, "")]
        else:
            rest.append(arg)
    if recipe not in RECIPES:
        console.print(f"spade train: unknown recipe {recipe!r}; choose from {', '.join(RECIPES)}")
        return 2
    if resume is not None:
        if rest:
            console.print(
                "spade train: --resume continues a run with its saved config; "
                "overrides are not allowed"
            )
            return 2
        run_dir = Path(resume)
        if not (run_dir / "config.json").exists():
            console.print(f"spade train: {run_dir} holds no run (no config.json)")
            return 2
        cfg = config_io.load(run_dir / "config.json")
    else:
        cfg = tyro.cli(
            TrainConfig,
            default=RECIPES[recipe],
            args=rest,
            prog="spade train",
            description=_TRAIN_HELP,
        )
    from spade.evals.before_after import split_suite_spec
    from spade.selfplay.models import serve_fsdp_rank
    from spade.train import train

    try:
        for spec in cfg.eval_suites:
            split_suite_spec(spec)
    except ValueError as exc:
        console.print(f"spade train: --eval-suites: {exc}")
        return 2
    if cfg.model.trainer == "fsdp":
        from spade.backends.fsdp import init_distributed, rank

        try:
            init_distributed()
        except RuntimeError as exc:
            console.print(f"spade train --trainer fsdp: {exc}")
            return 2
        if rank() != 0:  # the loop runs on rank 0; this rank holds a shard and follows it
            serve_fsdp_rank(cfg)
            return 0
    try:
        summary = train(cfg, resume=resume is not None, show=console.print)
    except (FileExistsError, UsageError) as exc:  # a usage error, not a crash
        console.print(f"spade train: {exc}")
        return 2
    print_summary(summary)
    return 0


_TRAIN_HELP = (
    "Run SPADE self-play. Presets: --recipe tiny-cpu (default: the embedded model on this "
    "machine), paper-games, paper-tools (real models; set --model). --resume RUN_DIR "
    "continues a run exactly where it was stopped. Every field below overrides the preset."
)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def print_summary(summary: dict[str, Any]) -> None:
    table = Table(title="self-play summary")
    for column in (
        "iter",
        "valid designs",
        "designer reward",
        "regret (closed)",
        "new-design regret [95% CI]",
        "plain win",
        "hinted win",
        "agent/designer samples",
        "frontier/mastered/out",
        "turns",
        "s",
    ):
        table.add_column(column, justify="right")
    for m in summary["iterations"]:
        bands = m.get("bands") or {}
        total = bands.get("total") or 0
        shares = "-"
        if total:
            shares = "/".join(
                f"{bands.get(k, 0) / total:.0%}" for k in ("frontier", "mastered", "out_of_reach")
            )
        new = m.get("new_design_regret")
        new_text = "-" if not new else f"{new['mean']:+.2f} [{new['low']:+.2f}, {new['high']:+.2f}]"
        table.add_row(
            str(m["iteration"]),
            _fmt(m.get("valid_design_rate")),
            _fmt(m.get("designer_reward")),
            _fmt(m.get("regret")),
            new_text,
            _fmt(m["plain_win_rate"]),
            _fmt(m.get("hinted_win_rate")),
            f"{m.get('agent_samples', 0)}/{m.get('designer_samples', 0)}",
            shares,
            _fmt(m["mean_turns"]),
            f"{m['seconds']:.0f}",
        )
    console.print(table)
    evals = summary.get("eval", {})
    for when in ("before", "after"):
        if when in evals:
            o = evals[when]["overall"]
            console.print(
                f"held-out win rate {when}: {o['rate']:.2f} "
                f"(95% CI {o['low']:.2f}-{o['high']:.2f}, {o['episodes']} episodes)"
            )
    suites = evals.get("suites", {})
    for spec in dict.fromkeys(k for phase in suites.values() for k in phase):
        cells = []
        for when in ("before", "after"):
            result = suites.get(when, {}).get(spec)
            if result and "overall" in result:
                o = result["overall"]
                cells.append(f"{when} {o['rate']:.2f} ({o['wins']}/{o['episodes']})")
            elif result:
                cells.append(f"{when}: skipped ({result.get('skipped')})")
        console.print(f"{spec}: " + ", ".join(cells))
    model = summary.get("model") or {}
    if model:
        params = model.get("parameters")
        size = f", {params / 1e6:.1f}M parameters" if params else ""
        console.print(
            f"model: {model.get('path', '?')}{size}, {model.get('precision', '?')} on "
            f"{model.get('device', '?')}"
        )
    if "peak_rss_mib" in summary:
        console.print(f"peak memory (RSS): {summary['peak_rss_mib'] / 1024:.2f} GiB")
    console.print(f"run directory: {summary['run_dir']}")


# --- eval -------------------------------------------------------------------------------------


def eval_cmd(
    paths: Annotated[list[Path], tyro.conf.Positional] = [],  # noqa: B006 - tyro reads the default
    /,
    model: str = "smollm2",
    run_dir: Path | None = None,
    openai_base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    seeds: int = 4,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    temperature: float = 1.0,
    seed: int = 0,
    json_output: Annotated[bool, tyro.conf.arg(name="json")] = False,
    sandbox: Literal["local", "ray"] = "local",
    suite: str | None = None,
    level: int | None = None,
    limit: int = 10,
    policy: Literal["model", "solution"] = "model",
) -> int:
    """Play environments with a policy: win rate per skill and overall, with 95% intervals.

    Args:
        paths: Environment files or directories; default: the bundled held-out set.
        model: `smollm2` (the embedded default), `tiny-test`, a local checkpoint directory, a hub
            id, or the served model's name.
        run_dir: Evaluate the latest checkpoint of this training run (its Agent).
        openai_base_url: Sample from an OpenAI-compatible server instead of a local model.
        api_key_env: Environment variable with the server's key.
        seeds: Episodes per environment (seeds 0..N-1).
        max_turns: Turn cap per episode; default 8, or the suite's (its multi-turn
            environments cap themselves).
        max_tokens: Longest reply per turn; default 48, or the suite's (512 for humaneval,
            256 for bfcl, 64 otherwise).
        temperature: Sampling temperature.
        seed: Sampling seed.
        json_output: Print the result as one JSON object.
        sandbox: Where the environments run: `local` (this host) or `ray` (the hosts of the Ray
            cluster at RAY_ADDRESS, or a local Ray; the `ray` extra).
        suite: Evaluate on a suite instead of PATHS: `NAME[:SUBSET,...]`, e.g.
            `reasoning-gym:basic_arithmetic,chain_sum` (the `eval` extra; docs/evaluation.md).
        level: The suite's curriculum level (reasoning-gym); default: each subset's default.
        limit: Items per suite subset.
        policy: `model`, or `solution`: replay each environment's own `solution()` (a check
            that an adapter or a hand-written environment scores its known answer as a win).
    """
    from spade.evals.winrate import evaluate, evaluate_solutions
    from spade.sandbox import SandboxConfig, make_sandbox

    config = SandboxConfig()
    turns, tokens = 8, 48
    if suite is not None:
        if paths:
            console.print("spade eval: give PATHS or --suite, not both")
            return 2
        from spade.evals.suites import suite_budget, suite_programs, suite_sandbox_config

        try:
            programs: list[Program] | str = suite_programs(
                suite, limit=limit, level=level, seed=seed
            )
            config = suite_sandbox_config(suite, config)
            turns, tokens = suite_budget(suite)
        except ValueError as exc:
            console.print(f"spade eval: {exc}")
            return 2
    else:
        programs = _programs(paths) if paths else bundled.heldout_programs()
    if isinstance(programs, str):
        console.print(f"spade eval: {programs}")
        return 2
    agent = (
        None
        if policy == "solution"
        else _policy_for(model, run_dir, openai_base_url, api_key_env, seed)
    )
    max_turns = turns if max_turns is None else max_turns
    max_tokens = tokens if max_tokens is None else max_tokens
    params = SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed)

    async def run() -> Any:
        envs = await make_sandbox(sandbox, config).start()
        try:
            if agent is None:
                return await evaluate_solutions(
                    envs, programs, seeds=range(seeds), max_turns=max_turns
                )
            return await evaluate(
                agent, envs, programs, seeds=range(seeds), params=params, max_turns=max_turns
            )
        finally:
            await envs.aclose()

    result = asyncio.run(run())
    if json_output:
        print(json.dumps(result.to_json()))
        return 0
    _print_eval(result, f"win rate over {len(programs)} environments x {seeds} seeds", policy)
    return 0


def _print_eval(result: Any, title: str, policy: str) -> None:
    """The win-rate table of `spade eval` (per skill and overall, 95% Wilson intervals)."""
    table = Table(title=title)
    for column in ("skill", "wins", "episodes", "rate", "95% CI"):
        table.add_column(column)
    rows = sorted(result.by_skill.items()) + [("overall", result.overall)]
    for name, rate in rows:
        low, high = rate.interval
        table.add_row(
            name, str(rate.wins), str(rate.episodes), f"{rate.rate:.2f}", f"{low:.2f}-{high:.2f}"
        )
    console.print(table)
    if result.errors and policy == "solution":
        console.print(
            f"{result.errors} episodes had no replayable solution or ended with an environment "
            "error (losses)"
        )
    elif result.errors:
        console.print(f"{result.errors} episodes ended with an environment error (losses)")


def _exemplars(pool: Any, rng: random.Random) -> Any:
    return lambda skill: [m.program for m in pool.exemplars(skill, rng, k=10)]


def _programs(paths: list[Path]) -> list[Program] | str:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.rglob("*.py")))
        elif path.is_file():
            files.append(path)
        else:
            return f"no such file or directory: {path}"
    return [Program.from_file(f) for f in files] or "no environment files found"


def _policy_for(
    model: str, run_dir: Path | None, base_url: str | None, key_env: str, seed: int
) -> Any:
    from spade.selfplay.models import build_policy, local_backend, resolve_model

    if run_dir is not None:
        cfg = config_io.load(run_dir / "config.json")
        state = json.loads((run_dir / "state.json").read_text())
        backend = local_backend(cfg.model, resolve_model(cfg.model, cfg.seed), cfg.seed, cfg.ppo)
        if state.get("checkpoint"):
            backend.load(run_dir / state["checkpoint"] / "agent")
        return backend
    return build_policy(
        ModelConfig(model=model, openai_base_url=base_url, openai_api_key_env=key_env), seed
    )


# --- design -----------------------------------------------------------------------------------

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
    form: Literal["compact", "full"] | None = None,
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
    from rich.progress import Progress

    from spade.envs.pool import Pool
    from spade.sandbox import make_sandbox
    from spade.selfplay.admission import DesignRequest, design_and_admit
    from spade.selfplay.designer import SkillRotation

    defaults = design_defaults(model, openai_base_url)
    max_tokens = defaults.max_tokens if max_tokens is None else max_tokens
    temperature = defaults.temperature if temperature is None else temperature
    budget = defaults.prompt_budget_chars if prompt_budget_chars is None else prompt_budget_chars
    form = defaults.form if form is None else form
    out.mkdir(parents=True, exist_ok=True)
    policy = _policy_for(model, None, openai_base_url, api_key_env, seed)
    rotation = SkillRotation(skills, min(3, len(skills)))
    documents = bundled.grounding_documents()
    admitted = 0
    programs: list[Program] = []
    with Pool(out / "pool.sqlite") as pool, Progress(console=console) as progress:
        task = progress.add_task("designing", total=count)
        loop = asyncio.new_event_loop()
        envs = make_sandbox(sandbox)
        loop.run_until_complete(envs.start())
        try:
            for rnd in range(max_rounds):
                rng = random.Random(f"{seed}/{rnd}")
                request = DesignRequest(
                    iteration=rnd,
                    regen=rnd,
                    skills=tuple(rotation.skills_for(rnd, batch)),
                    rng=rng,
                    params=SamplingParams(
                        max_tokens=max_tokens, temperature=temperature, seed=rng.randrange(2**31)
                    ),
                    limit=count - admitted,
                    documents=documents,
                    exemplars_for=_exemplars(pool, rng),
                    prompt_settings=PromptSettings(
                        budget_chars=budget or None, form=form
                    ),  # 0: no cap
                )
                outcomes = design_and_admit(policy, envs, pool, loop.run_until_complete, request)
                with open(out / "attempts.jsonl", "a") as log:
                    for o in outcomes:
                        a = o.attempt
                        if o.admitted and a.program is not None:
                            name = f"game_{rnd:05d}_{a.attempt_index:03d}_{skill_slug(a.skill)}.py"
                            (out / name).write_text(standalone(a.program.code))
                            programs.append(a.program)
                            admitted += 1
                            progress.advance(task)
                        log.write(json.dumps(_attempt_line(rnd, o)) + "\n")
                if admitted >= count:
                    break
        finally:
            loop.run_until_complete(envs.aclose())
            loop.close()
    console.print(f"{admitted} environments admitted into {out}")
    if format != "reference" and programs:
        from spade.envs.bundle import package_name
        from spade.exports import export

        export(programs, out / format, format, package_name(out))
        console.print(f"packaged for {format} in {out / format} (docs/exports.md)")
    return 0 if admitted >= count else 1


def _attempt_line(rnd: int, outcome: Any) -> dict[str, Any]:
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


# --- bootstrap --------------------------------------------------------------------------------


def bootstrap_cmd(
    model: str = "smollm2",
    force: bool = False,
    seed: int = 0,
    measure: bool = True,
    steps: int = DEFAULT_STEPS,
    form: Literal["compact", "full"] = TINY_CPU.design.form,
    lora_rank: int = 0,
    trainable_layers: int = 10,
    learning_rate: float = 3e-4,
) -> int:
    """Warm-start a model on both roles (template families and seeds, cached), then measure it.

    Args:
        model: `smollm2` (the embedded default), `tiny-test`, or a local checkpoint.
        form: The Designer form it is taught (the `tiny-cpu` recipe uses `compact`).
        lora_rank: Train LoRA adapters of this rank instead of all weights (0: all weights).
        trainable_layers: Train only the top N decoder layers (0: every layer).
        learning_rate: Peak learning rate (AdamW, 5% warm-up, cosine decay).
        steps: Optimizer steps (the budget: the same command gives the same weights on a quiet
            or a busy machine; a different budget is a different cached model).
        force: Rebuild even if a cached model exists.
        seed: Seed of the warm start.
        measure: Report the share of admitted Designer replies (48, the loop's prompt) and the
            Agent's win rate on the held-out evaluation set.
    """
    from spade.warmstart.finetune import bootstrap

    if steps <= 0:
        console.print(f"spade bootstrap: --steps must be positive, got {steps}")
        return 2
    path = bootstrap(
        model,
        seed=seed,
        force=force,
        steps=steps,
        form=form,
        lora_rank=lora_rank,
        trainable_layers=trainable_layers or None,
        learning_rate=learning_rate,
    )
    console.print(f"warm-started model: {path}")
    if measure:
        from spade.evals.measure import measure_model

        report = measure_model(
            str(path), seed=seed, form=form, show=lambda line: console.print(line, soft_wrap=True)
        )
        console.print(json.dumps(report, indent=2))
    return 0


def untie_cmd(
    model: str = "smollm2",
    out: Path | None = None,
    form: Literal["compact", "full"] = "compact",
    warm_start: bool = True,
    force: bool = False,
) -> int:
    """Write a copy of a model whose LM head is its own weight, for vLLM weight sync.

    vLLM 0.32's `reload_weights` keeps the launch-time LM head of a model with tied embeddings
    (SmolLM2 ties them), so `spade train --vllm-urls` refuses such a model: serve and train
    the copy this writes instead (docs/scale.md). Same outputs; one more weight matrix.

    Args:
        model: `smollm2` (the embedded default, warm-started as `spade train` would), `tiny-test`,
            or a local model folder.
        out: Where to write the copy (default: beside the model, with `-untied` appended).
        form: The Designer form of the warm start (as `--designer.form` in training).
        warm_start: Untie the warm-started default (as `spade train` trains it), not the raw one.
        force: Rewrite an existing copy.
    """
    from spade.backends.torch_setup import untie_embeddings
    from spade.config import ModelConfig
    from spade.selfplay.models import resolve_model

    source = resolve_model(ModelConfig(model=model, warm_start=warm_start), form=form)
    target = out if out is not None else Path(str(source).rstrip("/") + "-untied")
    if (target / "config.json").exists() and not force:
        console.print(f"untied copy (exists; --force rewrites it): {target}", soft_wrap=True)
    else:
        try:
            untie_embeddings(source, target)
        except ValueError as e:
            console.print(f"spade untie: {e}")
            return 2
        console.print(f"untied copy of {source}: {target}", soft_wrap=True)
    console.print(
        f"serve it: MODEL={target} recipes/vllm_server.sh\n"
        f"train it: spade train --model {target} --vllm-urls URL ...",
        soft_wrap=True,
    )
    return 0


def run(name: str, argv: list[str]) -> int:
    if name == "train":
        return train_main(argv)
    commands = {
        "eval": eval_cmd,
        "design": design_cmd,
        "bootstrap": bootstrap_cmd,
        "untie": untie_cmd,
    }
    result = tyro.cli(commands[name], args=argv, prog=f"spade {name}")  # type: ignore[call-overload]
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2:]))
