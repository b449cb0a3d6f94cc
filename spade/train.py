"""`spade train`: set up a run directory, the models, the sandbox and the pool, then loop.

A run directory holds everything: `config.json`, `pool.sqlite` (programs, attempts, episodes,
rewards, bands), `checkpoints/iter-N/` (trainer state: weights, optimizer, RNG), `state.json`
(the last committed iteration and the pending Designer samples), `metrics.jsonl` (one line per
iteration), `eval.json` (held-out evaluation) and `summary.json`. `--resume RUN_DIR` continues
after the last committed iteration; a killed iteration is dropped and replayed identically.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spade import bundled
from spade import config as config_io
from spade.backends.base import Policy, PPOConfig, SamplingParams
from spade.config import ModelConfig, TrainConfig
from spade.evaluate import EvalResult, evaluate
from spade.loop import Models, run_iteration
from spade.pool import Pool
from spade.rewards import make_designer_reward
from spade.rundir import LoopState, atomic_write_text, checkpoint, restore
from spade.sandbox import SandboxAPI, make_sandbox
from spade.types import GAME_SKILLS, TOOL_SKILLS, Program, Verdict


def resolve_model(
    model: ModelConfig, seed: int = 0, progress: bool = True, form: str = "compact"
) -> str:
    """The model folder to load: the embedded names (`smollm2`, `tiny-test`) become their cached
    folders (fetched / built on first use), and the embedded default is warm-started for the
    Designer `form` first (`spade bootstrap`, cached) unless `model.warm_start` is off; anything
    else is passed on as given."""
    if model.openai_base_url:
        return model.model  # the served model's name
    from spade.backends.local import model_path

    if model.warm_start and model.model == "smollm2":
        import gc

        from spade.backends.local import release_free_memory
        from spade.bootstrap import bootstrap

        path = str(bootstrap(model.model, form=form, progress=progress))
        # a warm start trained in this process leaves its model, optimizer and activations
        # behind as free heap: hand them back before the run loads its own
        gc.collect()
        release_free_memory()
        return path
    return model_path(model.model, progress=progress)


def local_config(model: ModelConfig, path: str, seed: int, ppo: PPOConfig | None = None) -> Any:
    from spade.backends.local import LocalConfig, LoraSettings

    lora = LoraSettings(r=model.lora_rank) if model.lora_rank else None
    return LocalConfig(
        model=path,
        device=model.device,
        seed=seed,
        ppo=ppo or PPOConfig(),
        lora=lora,
        threads=model.threads,
        trainable_layers=None if lora else model.trainable_layers,
    )


def local_backend(model: ModelConfig, path: str, seed: int, ppo: PPOConfig | None = None) -> Any:
    from spade.backends.local import LocalBackend

    return LocalBackend(local_config(model, path, seed, ppo))


def build_policy(model: ModelConfig, seed: int = 0, progress: bool = True) -> Policy:
    """A sampling-only policy: an OpenAI-compatible server, or a local model."""
    if model.openai_base_url:
        from spade.backends.openai_compat import OpenAICompatConfig, OpenAICompatPolicy

        config = OpenAICompatConfig(
            base_url=model.openai_base_url, model=model.model, api_key_env=model.openai_api_key_env
        )
        return OpenAICompatPolicy(config)
    policy: Policy = local_backend(model, resolve_model(model, seed, progress), seed)
    return policy


def build_models(cfg: TrainConfig, model: str) -> Models:
    if cfg.model.openai_base_url:
        raise ValueError(
            "a policy served over the OpenAI API cannot be trained (no weights to update); "
            "use it with `spade design` or `spade eval`"
        )
    if cfg.model.vllm_urls and cfg.separate_designer:
        raise ValueError("--separate-designer with --vllm-urls is not supported yet")
    if cfg.model.trainer == "fsdp":
        from spade.backends.fsdp import FSDPBackend, FSDPTrainer

        if cfg.separate_designer:
            raise ValueError("--separate-designer with --trainer fsdp is not supported yet")
        policy = local_backend(cfg.model, model, cfg.seed, cfg.ppo)  # rank 0 samples with it
        trainer = FSDPTrainer(
            FSDPBackend(local_config(cfg.model, model, cfg.seed, cfg.ppo)), policy
        )
        return _with_vllm(cfg, model, Models(policy, trainer, policy, trainer))
    agent = local_backend(cfg.model, model, cfg.seed, cfg.ppo)
    designer = agent
    if cfg.separate_designer:
        designer = local_backend(cfg.model, model, cfg.seed + 1, cfg.ppo)
    return _with_vllm(cfg, model, Models(agent, agent, designer, designer))


def _with_vllm(cfg: TrainConfig, model: str, models: Models) -> Models:
    """With `--vllm-urls`: sampling moves to the servers and the trainer pushes its weights into
    them after every update (`spade.backends.weight_sync`)."""
    if not cfg.model.vllm_urls:
        return models
    from spade.backends.vllm import VLLMConfig, VLLMPolicy
    from spade.backends.weight_sync import SyncedTrainer, VLLMWeightSync

    config = VLLMConfig(
        tuple(cfg.model.vllm_urls),
        model=cfg.model.vllm_model or cfg.model.model,
        tokenizer=model,
        api_key_env=cfg.model.openai_api_key_env,
    )
    trainer: Any = models.agent_trainer
    local: Any = getattr(trainer, "policy", None) or trainer  # FSDPTrainer's rank-0 copy
    policy = VLLMPolicy(config, tokenizer=getattr(local, "tokenizer", None))
    synced = SyncedTrainer(trainer, VLLMWeightSync(policy, cfg.run_dir / "weights"))
    return Models(policy, synced, policy, synced)


def serve_fsdp_rank(cfg: TrainConfig) -> None:
    """A torchrun rank other than 0 under `--trainer fsdp`: hold a shard and follow rank 0's
    updates, saves and loads until its run ends (the model path comes from rank 0, which
    fetches and warm-starts it first)."""
    from spade.backends.fsdp import FSDPBackend, serve

    path = fsdp_model_path(cfg)
    serve(FSDPBackend(local_config(cfg.model, path, cfg.seed, cfg.ppo)))


def fsdp_model_path(cfg: TrainConfig, progress: bool = True) -> str:
    """The model folder every rank loads: resolved (fetched, warm-started) on rank 0 alone, then
    broadcast, so the ranks neither race on the cache nor repeat the warm start."""
    import torch.distributed as dist

    message: list[Any] = [None]
    if dist.get_rank() == 0:
        message[0] = resolve_model(cfg.model, cfg.seed, progress, cfg.design.form)
    dist.broadcast_object_list(message, src=0)
    return str(message[0])


MINI_SEED_RENDER_SEED = 4321
"""Render seed of `mini_seed_programs`: neither the warm start's (0) nor the evaluation set's."""


@functools.cache
def mini_seed_programs(tries: int = 20) -> tuple[Program, ...]:
    """One compact program of each mini family the warm start trains on (`cfg.mini_seeds`),
    rendered with a seed of their own, source `mini-seed:<family>`; deterministic.

    No seed is a near-duplicate of an evaluation program (`spade.warmdata.eval_programs`): a
    family's renders are drawn until one is not (up to `tries`), and a family whose every
    render is one (a family with few variants) has no seed."""
    from spade.templates.mini import MINI_EVAL_FAMILIES, MINI_FAMILIES, render_mini
    from spade.validate import ValidatorConfig, check_duplicates
    from spade.warmdata import eval_programs

    evaluation, cfg = eval_programs(), ValidatorConfig()
    out = []
    for family in sorted(set(MINI_FAMILIES) - set(MINI_EVAL_FAMILIES)):
        rng = random.Random(f"{MINI_SEED_RENDER_SEED}/{family}")
        for _ in range(tries):
            r = render_mini(rng, family)
            program = Program.from_code(
                r.code, hint=r.hint, skill=r.skill, source=f"mini-seed:{family}"
            )
            if check_duplicates(program, evaluation, cfg) is None:
                out.append(program)
                break
    return tuple(out)


def seed_pool(pool: Pool, cfg: TrainConfig) -> int:
    """Admit the bundled seeds (and with `cfg.mini_seeds` the mini seeds) for the configured
    skills at iteration 0 (once)."""
    wanted = set(cfg.design.skills)
    programs = [*bundled.seed_programs(), *(mini_seed_programs() if cfg.mini_seeds else ())]
    added = 0
    for program in programs:
        if program.skill in wanted and program.env_id not in pool:
            verdict = Verdict(program.env_id, True, (), {"bundled": True})
            added += pool.add_program(program, verdict, 0, {"seed_file": program.source})
    return added


def heldout_for(cfg: TrainConfig) -> list[Program]:
    """Held-out environments of the setting (`cfg.eval_set`): the bundled games, tool tasks or
    both, or the compact renders of the held-out template families."""
    if cfg.eval_set == "families":
        from spade.warmdata import eval_programs

        return eval_programs()
    games = any(s in GAME_SKILLS for s in cfg.design.skills)
    tools = any(s in TOOL_SKILLS for s in cfg.design.skills)
    return [
        p
        for p in bundled.heldout_programs()
        if (games and p.skill in GAME_SKILLS) or (tools and p.skill in TOOL_SKILLS)
    ]


def train(
    cfg: TrainConfig,
    *,
    resume: bool = False,
    show: Callable[[str], None] = print,
    progress_bars: bool = True,
    models: Models | None = None,
) -> dict[str, Any]:
    """Run (or continue) a self-play run; returns the summary also written to summary.json.

    `models` replaces the backends built from `cfg.model` (tests use a scripted policy)."""
    run_dir = cfg.run_dir
    if resume:
        cfg = config_io.load(run_dir / "config.json")
    elif (run_dir / "state.json").exists():
        raise FileExistsError(
            f"{run_dir} already holds a run: pass --resume {run_dir}, or choose another --run-dir"
        )
    for spec in cfg.eval_suites:
        split_suite_spec(spec)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not resume:
        config_io.save(cfg, run_dir / "config.json")
    built = models is None
    if models is None:
        if cfg.model.trainer == "fsdp":
            path = fsdp_model_path(cfg, progress_bars)
        else:
            path = resolve_model(cfg.model, cfg.seed, progress_bars, cfg.design.form)
        models = build_models(cfg, path)
    reward_fn = make_designer_reward(cfg.designer_reward)
    documents = bundled.grounding_documents() if cfg.design.grounding else []
    event_loop = asyncio.new_event_loop()
    run_async = event_loop.run_until_complete
    summary: dict[str, Any] = {"run_dir": str(run_dir), "model": describe_models(models)}
    with Pool(run_dir / "pool.sqlite") as pool:
        seed_pool(pool, cfg)
        state = restore(run_dir, models, pool) if resume else LoopState()
        if state.reward_state is not None and hasattr(reward_fn, "load_state_dict"):
            reward_fn.load_state_dict(state.reward_state)
        sandbox = make_sandbox(cfg.sandbox_backend, cfg.sandbox)
        run_async(sandbox.start())
        try:
            evals = _read_json(run_dir / "eval.json")
            if cfg.heldout_eval and "before" not in evals:
                show("evaluating on the held-out environments (before training)")
                evals["before"] = run_async(_heldout(models, sandbox, cfg)).to_json()
                _write_json(run_dir / "eval.json", evals)
            _suites_phase(evals, "before", models, cfg, run_async, show)
            with _Progress(cfg.iterations, state.iteration, progress_bars) as bar:
                for it in range(state.iteration + 1, cfg.iterations + 1):
                    metrics = run_iteration(
                        it,
                        cfg,
                        models,
                        sandbox,
                        pool,
                        state,
                        reward_fn,
                        documents,
                        run_async,
                        bar.phase,
                    )
                    metrics["peak_rss_mib"] = peak_rss_mib()
                    if hasattr(reward_fn, "state_dict"):
                        state.reward_state = reward_fn.state_dict()
                    checkpoint(run_dir, it, models, state, metrics)
                    bar.done(metrics)
            if cfg.heldout_eval and "after" not in evals:
                show("evaluating on the held-out environments (after training)")
                evals["after"] = run_async(_heldout(models, sandbox, cfg)).to_json()
                _write_json(run_dir / "eval.json", evals)
            _suites_phase(evals, "after", models, cfg, run_async, show)
        finally:
            run_async(sandbox.aclose())
            event_loop.close()
            if built:  # an FSDP trainer releases the ranks that follow it
                for trainer in {
                    id(t): t for t in (models.agent_trainer, models.designer_trainer)
                }.values():
                    close = getattr(trainer, "close", None)
                    if callable(close):
                        close()
        summary["eval"] = evals
    summary["peak_rss_mib"] = peak_rss_mib()
    summary["iterations"] = [
        json.loads(line)
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        if line.strip()
    ]
    _write_json(run_dir / "summary.json", summary)
    return summary


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB, macOS bytes)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20 if sys.platform == "darwin" else 1 << 10), 1)


def describe_models(models: Models) -> dict[str, Any]:
    """What the run trains: model folder, parameters, precision and device (for the summary)."""
    agent: Any = models.agent
    out: dict[str, Any] = {}
    for key, attr in (("path", "model_path"), ("precision", "precision")):
        if hasattr(agent, attr):
            out[key] = str(getattr(agent, attr))
    if hasattr(agent, "device"):
        out["device"] = str(agent.device)
    if hasattr(agent, "num_parameters"):
        out["parameters"] = int(agent.num_parameters)
    return out


async def _heldout(models: Models, sandbox: SandboxAPI, cfg: TrainConfig) -> EvalResult:
    params = SamplingParams(
        max_tokens=cfg.play.max_tokens, temperature=cfg.play.temperature, seed=cfg.seed + 7
    )
    return await evaluate(
        models.agent,
        sandbox,
        heldout_for(cfg),
        seeds=range(cfg.eval_seeds),
        params=params,
        max_turns=cfg.play.max_turns,
        max_context_tokens=cfg.model.max_context_tokens,
        kwargs=None if cfg.eval_difficulty is None else {"difficulty": cfg.eval_difficulty},
    )


def _suites_phase(
    evals: dict[str, Any],
    phase: str,
    models: Models,
    cfg: TrainConfig,
    run_async: Callable[[Any], Any],
    show: Callable[[str], None],
) -> None:
    """Evaluate the Agent on each of `cfg.eval_suites` not yet in `evals["suites"][phase]`,
    writing eval.json after each (a resumed run redoes only what is missing)."""
    if not (cfg.heldout_eval and cfg.eval_suites):
        return
    done = evals.setdefault("suites", {}).setdefault(phase, {})
    for spec in cfg.eval_suites:
        if spec not in done:
            show(f"evaluating on {spec} ({phase} training)")
            done[spec] = run_async(_suite(models, cfg, spec))
            if "skipped" in done[spec]:
                show(f"  skipped: {done[spec]['skipped']}")
            _write_json(cfg.run_dir / "eval.json", evals)


async def _suite(models: Models, cfg: TrainConfig, spec: str) -> dict[str, Any]:
    """One suite (`NAME[:SUBSET,...][@LEVEL]`) in its own sandbox, with the suite's turn and
    reply budget (as `spade eval --suite`); {"skipped": why} when it cannot be built."""
    from spade.suites import suite_budget, suite_programs, suite_sandbox_config

    name, level = split_suite_spec(spec)
    try:
        programs = suite_programs(name, limit=cfg.eval_suite_limit, level=level, seed=0)
    except ValueError as exc:
        return {"skipped": str(exc)}
    turns, tokens = suite_budget(name)
    params = SamplingParams(max_tokens=tokens, temperature=cfg.play.temperature, seed=cfg.seed + 7)
    sandbox = make_sandbox(cfg.sandbox_backend, suite_sandbox_config(name, cfg.sandbox))
    await sandbox.start()
    try:
        result = await evaluate(
            models.agent,
            sandbox,
            programs,
            seeds=range(cfg.eval_seeds),
            params=params,
            max_turns=turns,
            max_context_tokens=cfg.model.max_context_tokens,
        )
    finally:
        await sandbox.aclose()
    return result.to_json()


def split_suite_spec(spec: str) -> tuple[str, int | None]:
    """`NAME[:SUBSET,...][@LEVEL]` -> (`NAME[:SUBSET,...]`, level); raises ValueError on an
    unknown suite or a level that is not an integer (checked before a run starts)."""
    from spade.suites import parse_suite

    name, at, level = spec.partition("@")
    parse_suite(name)
    if at and not level.strip().lstrip("-").isdigit():
        raise ValueError(f"suite {spec!r}: the level after '@' must be an integer")
    return name, int(level) if at else None


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


class _Progress:
    """Iterations with ETA, and the phase of the current one (rich)."""

    def __init__(self, total: int, done: int, enabled: bool) -> None:
        self.enabled, self.total, self.done_count = enabled, total, done
        self.started = time.monotonic()
        self.bar: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("[bold]self-play[/] {task.fields[phase]:<9}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[last]}"),
            )
            self.task = self.bar.add_task(
                "train", total=self.total, completed=self.done_count, phase="", last=""
            )
            self.bar.start()
        return self

    def phase(self, name: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, phase=name)

    def done(self, metrics: dict[str, Any]) -> None:
        if self.bar is not None:
            valid = metrics.get("valid_design_rate")
            last = f"win {metrics['plain_win_rate']:.2f}" + (
                f"  valid {valid:.2f}" if valid is not None else ""
            )
            self.bar.update(self.task, advance=1, last=last, phase="")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
