"""`spade train`: set up a run directory, the models, the sandbox and the pool, then loop.

A run directory holds everything: `config.json`, `pool.sqlite` (programs, attempts, episodes,
rewards, bands), `checkpoints/iter-N/` (trainer state: weights, optimizer, RNG), `state.json`
(the last committed iteration and the pending Designer samples), `metrics.jsonl` (one line per
iteration), `eval.json` (held-out evaluation), `summary.json` and `start_model.json` (the sha256
of the weights it started from: `spade.start_weights`). `--resume RUN_DIR` continues after the
last committed iteration, from the same starting weights only; a killed iteration is dropped and
replayed identically.
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

from spade import config as config_io
from spade import start_weights
from spade.backends.base import Models
from spade.config import FSDP, TrainConfig, UsageError
from spade.envs import bundled
from spade.envs.pool import Pool
from spade.evals import before_after
from spade.files import atomic_write_text
from spade.prompts import PromptSettings
from spade.rewards import make_designer_reward
from spade.sandbox import make_sandbox
from spade.selfplay.loop import LoopContext, run_iteration, time_totals
from spade.selfplay.models import build_models, fsdp_model_path, warm_started_model
from spade.selfplay.rundir import LoopState, checkpoint, read_metrics, restore
from spade.selfplay.tracking import check_available, open_trackers
from spade.types import Program, Verdict

MINI_SEED_RENDER_SEED = 4321
"""Render seed of `mini_seed_programs`: neither the warm start's (0) nor the evaluation set's."""


@functools.cache
def mini_seed_programs(tries: int = 20) -> tuple[Program, ...]:
    """One compact program of each mini family the warm start trains on (`cfg.mini_seeds`),
    rendered with a seed of their own, source `mini-seed:<family>`; deterministic.

    No seed is a near-duplicate of an evaluation program (`spade.evals.sets.eval_programs`): a
    family's renders are drawn until one is not (up to `tries`), and a family whose every
    render is one (a family with few variants) has no seed."""
    from spade.envs.checks import ValidatorConfig
    from spade.envs.duplicates import check_duplicates
    from spade.evals.sets import eval_programs
    from spade.templates.mini import MINI_EVAL_FAMILIES, MINI_FAMILIES, render_mini

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


QUESTION_SEED_LEVEL = 1
"""Difficulty the question seeds play at: the level the near evaluation set asks (a
`QuestionEnv` defaults to 2, and self-play on level-2 questions moved the level-1 near set by
nothing measurable: docs/replication.md)."""


@functools.cache
def question_seed_programs(level: int = QUESTION_SEED_LEVEL) -> tuple[Program, ...]:
    """One question environment of each trained question family (`cfg.question_seeds`) whose
    constructor defaults to difficulty `level` (the loop builds pool environments with their
    defaults), source `question-seed:<family>`; deterministic."""
    from spade.templates import questions

    return tuple(
        Program.from_code(
            questions.question_env(family, level),
            hint="Work it out in one short step, then box the answer.",
            skill=questions.SKILL,
            source=f"question-seed:{family}",
        )
        for family in sorted(questions.TRAIN_FAMILIES)
    )


def seed_pool(pool: Pool, cfg: TrainConfig) -> int:
    """Admit the bundled seeds (with `cfg.bundled_seeds`), the mini seeds (`cfg.mini_seeds`)
    and the question seeds (`cfg.question_seeds`) of the configured skills at iteration 0
    (once)."""
    wanted = set(cfg.design.skills)
    programs = [
        *(bundled.seed_programs() if cfg.bundled_seeds else ()),
        *(mini_seed_programs() if cfg.mini_seeds else ()),
        *(question_seed_programs() if cfg.question_seeds else ()),
    ]
    added = 0
    for program in programs:
        if program.skill in wanted and program.env_id not in pool:
            verdict = Verdict(program.env_id, True, (), {"bundled": True})
            added += pool.add_program(program, verdict, 0, {"seed_file": program.source})
    return added


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
    cfg = _prepare(cfg, resume)
    built = models is None
    start = None
    if models is None:
        models, start = _build(cfg, run_dir, progress_bars)
    reward_fn = make_designer_reward(cfg.designer_reward)
    documents = bundled.grounding_documents() if cfg.design.grounding else []
    event_loop = asyncio.new_event_loop()
    run_async = event_loop.run_until_complete
    summary: dict[str, Any] = {"run_dir": str(run_dir), "model": describe_models(models)}
    if start is not None:
        summary["model"]["weights_sha256"] = start["weights_sha256"]
    with Pool(run_dir / "pool.sqlite") as pool:
        seed_pool(pool, cfg)
        state = restore(run_dir, models, pool) if resume else LoopState()
        if state.reward_state is not None and hasattr(reward_fn, "load_state_dict"):
            reward_fn.load_state_dict(state.reward_state)
        sandbox = make_sandbox(cfg.sandbox_backend, cfg.sandbox)
        run_async(sandbox.start())
        ctx = LoopContext(
            cfg,
            models,
            sandbox,
            pool,
            reward_fn,
            documents,
            run_async,
            PromptSettings.of(cfg.design),
        )
        trackers = None
        try:
            trackers = open_trackers(
                run_dir,
                cfg.log,
                config_io.to_json(cfg),
                lambda: read_metrics(run_dir / "metrics.jsonl")[0],
            )
            evals = _read_json(run_dir / "eval.json")
            # the before-cache holds a model folder's outcomes: not after a restored checkpoint
            _evaluate(evals, "before", ctx, show, use_cache=state.iteration == 0)
            _iterate(ctx, run_dir, state, trackers, progress_bars)
            _evaluate(evals, "after", ctx, show)
            for line in before_after.paired_lines(evals):
                show(line)
        finally:
            if trackers is not None:
                trackers.finish()
            run_async(sandbox.aclose())
            event_loop.close()
            if built:  # an FSDP trainer releases the ranks that follow it
                _close_trainers(models)
        summary["eval"] = evals
    return _summarise(run_dir, summary)


def _prepare(cfg: TrainConfig, resume: bool) -> TrainConfig:
    """The run's config (the saved one with `resume`), checked before any model loads, and the
    run directory holding it; raises FileExistsError for a new run in a used directory."""
    run_dir = cfg.run_dir
    if resume:
        cfg = config_io.load(run_dir / "config.json")
    elif (run_dir / "state.json").exists():
        raise FileExistsError(
            f"{run_dir} already holds a run: pass --resume {run_dir}, or choose another --run-dir"
        )
    for spec in cfg.eval_suites:
        before_after.split_suite_spec(spec)
    before_after.check_config(cfg)
    if cfg.play.agent_token_cap is not None and cfg.play.agent_token_cap < 1:
        raise UsageError(
            f"--play.agent-token-cap must be at least 1, got {cfg.play.agent_token_cap}"
        )
    missing = check_available(cfg.log)  # before minutes of model loading, not after
    if missing:
        raise UsageError(missing)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not resume:
        config_io.save(cfg, run_dir / "config.json")
    return cfg


def _build(
    cfg: TrainConfig, run_dir: Path, progress_bars: bool
) -> tuple[Models, dict[str, Any] | None]:
    """The models of `cfg.model` and what they start from (`start_weights.identity`, checked
    against `run_dir`'s record before any model loads: OtherStartError); a model that cannot
    be built as configured is a UsageError."""
    if cfg.model.trainer == FSDP:
        path = fsdp_model_path(cfg, progress_bars)
    else:
        path = warm_started_model(cfg.model, cfg.design.form, progress_bars)
    start = None if cfg.model.openai_base_url else start_weights.identity(path)
    start_weights.settle(run_dir, start)  # before anything in the run directory changes
    try:
        return build_models(cfg, path), start
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _evaluate(
    evals: dict[str, Any],
    when: str,
    ctx: LoopContext,
    show: Callable[[str], None],
    use_cache: bool = True,
) -> None:
    """The held-out evaluation and the suites, `when` "before" or "after" the iterations, into
    `evals` (and eval.json); `use_cache` as in `before_after.heldout_phase`."""
    cfg, models, run_async = ctx.cfg, ctx.models, ctx.run_async
    before_after.heldout_phase(
        evals, when, models, ctx.sandbox, cfg, run_async, show, use_cache=use_cache
    )
    before_after.suites_phase(evals, when, models, cfg, run_async, show)


def _iterate(
    ctx: LoopContext, run_dir: Path, state: LoopState, trackers: Any, progress_bars: bool
) -> None:
    """The iterations after `state.iteration`, each checkpointed into `run_dir` (where the run
    was found, whatever its saved config says) and sent to the trackers; the learning curve's
    evaluation runs before the checkpoint of an iteration where it is due."""
    cfg = ctx.cfg
    with _Progress(cfg.iterations, state.iteration, progress_bars) as bar:
        for it in range(state.iteration + 1, cfg.iterations + 1):
            metrics = run_iteration(it, ctx, state, bar.phase)
            if before_after.curve_due(cfg, it):  # the learning curve, before the checkpoint
                bar.phase("eval")
                started = time.perf_counter()
                metrics["near_subset_win_rate"] = ctx.run_async(
                    before_after.near_subset_rate(ctx.models, ctx.sandbox, cfg)
                )
                metrics["time/eval_s"] = time.perf_counter() - started
            metrics["peak_rss_mib"] = peak_rss_mib()
            if hasattr(ctx.reward_fn, "state_dict"):
                state.reward_state = ctx.reward_fn.state_dict()
            checkpoint(run_dir, it, ctx.models, state, metrics)
            if trackers is not None:
                trackers.send([metrics])
            bar.done(metrics)


def _close_trainers(models: Models) -> None:
    """Close each trainer once (the two roles may share one) that has a `close`."""
    for trainer in {id(t): t for t in (models.agent_trainer, models.designer_trainer)}.values():
        close = getattr(trainer, "close", None)
        if callable(close):
            close()


def _summarise(run_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """The summary completed from the run directory (every iteration's metrics, the time per
    phase, the paired results, the learning curve) and written to summary.json."""
    summary["peak_rss_mib"] = peak_rss_mib()
    summary["iterations"] = read_metrics(run_dir / "metrics.jsonl")[0]
    summary["time"] = time_totals(summary["iterations"])  # seconds per phase, whole run
    if "paired" in summary["eval"]:  # per set: before, after, difference and its interval
        summary["paired"] = before_after.paired_brief(summary["eval"])
    summary["learning_curve"] = before_after.learning_curve(summary["eval"], summary["iterations"])
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
            last += f"  {metrics['seconds']:.0f}s/it"
            self.bar.update(self.task, advance=1, last=last, phase="")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
