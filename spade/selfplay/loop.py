"""The self-play loop, top to bottom: design -> validate -> pool -> play -> rewards -> update.

    spade train                         # the embedded default model on this machine
    spade train --recipe paper-games    # the paper's games setting, for a real model

Every iteration (SPADE.md section 2):
1. design (every `regen_interval` iterations): the Designer writes `envs_per_regen` environments
   for the active skills; every attempt, valid or not, becomes a pending Designer sample;
2. validate in the sandbox; admitted programs enter the pool;
3. play: the Agent plays the active environments `plays_per_env` times; newly designed ones are
   also played with the hint, on the same seeds (`seed = base + i`);
4. score: Agent advantages are z-scores per environment; pending Designer samples whose window
   closes now get their reward (a function passed in) and per-(skill, regen) centred advantages;
5. update the policy on both roles' samples (or each role's policy on its own, with
   `--separate-designer`), then checkpoint: trainer state, loop state, pool, metrics.

Each metrics row says where the iteration's time went (`TIME_PHASES`) and how new its designs
are: `design/novelty_mean` (1 minus the similarity of each admitted design to its nearest
warm-start training program) and `design/copies` (attempts refused as copies of one,
`spade.selfplay.admission.TRAINING_COPY`: a copy gets the failed attempt's reward, never a
design's).

The pieces live beside it: `spade.selfplay.admission` (design -> validate -> admit, with retries),
`spade.selfplay.agent_samples` (the Agent's samples from its plays, under the token cap),
`spade.selfplay.windows` (Designer samples scored when their window closes),
`spade.selfplay.rundir` (checkpoint and resume).

Departures from the paper's reference, on purpose: generated code only runs in the sandbox; both
arms of the regret use the same seeds and counts; failed design attempts are trained with the
lowest reward; the loop state lives in the run directory, and `--resume` continues exactly.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spade.backends.base import (
    Completion,
    Models,
    Policy,
    Sample,
    SamplingParams,
)
from spade.config import TrainConfig
from spade.envs.pool import EpisodeRow, Pool
from spade.prompts import PromptSettings
from spade.rewards import (
    INVALID_DESIGN_REWARD,
    paired_win_difference,
    win_rate_of,
)
from spade.sandbox import SandboxAPI
from spade.selfplay import windows
from spade.selfplay.admission import (
    TRAINING_COPY,
    DesignRequest,
    design_and_admit,
    warm_start_programs,
)
from spade.selfplay.agent_samples import agent_samples_of
from spade.selfplay.designer import SkillRotation
from spade.selfplay.rollout import PlayRequest, Rollout, play
from spade.selfplay.rundir import LoopState
from spade.selfplay.windows import DesignerReward, close_windows, pending_item
from spade.types import BANDS, Program

TIME_PHASES = (
    "designer_sample_s",
    "validate_s",
    "agent_sample_s",
    "env_s",
    "update_s",
    "iteration_s",
)
"""Where an iteration's seconds go, each `time/<phase>` in its metrics: the Designer's sampling
(its hint calls included); validation, i.e. the rest of the design phase (the copy check, the
sandbox's checks, the hint gate's `solution()` calls); the Agent's sampling; the environments'
time during play (the rest of the play phase); the update; the whole iteration. What the five
phases leave of the iteration is scoring and bookkeeping (and, once per process, building the
warm start's program set for the copy check). The older `model_seconds` (both roles' sampling
and the update) and `env_seconds` (validation and play's environment time) are their sums."""


class _Timed:
    """A Policy wrapper that adds the seconds spent sampling to a counter (the time split)."""

    def __init__(self, policy: Policy, clock: dict[str, float], key: str) -> None:
        self.policy, self.clock, self.key = policy, clock, key

    def sample(self, prompts: Any, params: SamplingParams) -> list[Completion]:
        started = time.perf_counter()
        try:
            return self.policy.sample(prompts, params)
        finally:
            self.clock[self.key] = self.clock.get(self.key, 0.0) + time.perf_counter() - started

    def extend(self, prompt: Any, completion: Completion, messages: Any) -> Any:
        return self.policy.extend(prompt, completion, messages)


def _seed(cfg: TrainConfig, iteration: int, phase: str) -> int:
    return random.Random(f"{cfg.seed}/{iteration}/{phase}").randrange(2**31)


@dataclasses.dataclass(frozen=True)
class LoopContext:
    """What every iteration of a run works with, built once by `spade.train.train`."""

    cfg: TrainConfig
    models: Models
    sandbox: SandboxAPI
    pool: Pool
    reward_fn: DesignerReward
    documents: Sequence[dict[str, Any]]
    """The grounding corpus (empty without `design.grounding`)."""
    run_async: Callable[[Any], Any]
    """Runs a coroutine to completion on the run's event loop."""
    prompt_settings: PromptSettings
    """The Designer's prompt settings, `PromptSettings.of(cfg.design)`."""


def run_iteration(
    it: int, ctx: LoopContext, state: LoopState, progress: Callable[[str], None]
) -> dict[str, Any]:
    """One iteration; returns its metrics. Writes pool records; the caller checkpoints."""
    cfg = ctx.cfg
    clock: dict[str, float] = {}
    started = time.perf_counter()
    metrics: dict[str, Any] = {"iteration": it}
    new_envs: list[Program] = []
    if not cfg.no_design and (it - 1) % cfg.design.regen_interval == 0:
        progress("design")
        new_envs, design_metrics = _design_step(it, ctx, state, clock)
        metrics.update(design_metrics)

    progress("play")
    rollouts = _play_step(it, ctx, new_envs, clock)

    agent_samples, designer_samples, window_metrics = _score(it, ctx, state, rollouts)
    metrics.update(window_metrics)

    progress("update")
    t = time.perf_counter()
    losses = _update(ctx.models, agent_samples, designer_samples)
    clock["update_s"] = time.perf_counter() - t

    metrics.update(_play_metrics(rollouts, agent_samples, designer_samples))
    bands = ctx.pool.record_bands(it)
    metrics.update(bands=bands, band_shares=_band_shares(bands), loss=losses)
    clock["iteration_s"] = time.perf_counter() - started
    metrics.update(_time_metrics(clock))
    return metrics


def _score(
    it: int, ctx: LoopContext, state: LoopState, rollouts: Sequence[Rollout]
) -> tuple[list[Sample], list[Sample], dict[str, Any]]:
    """Agent samples (advantages per environment group, plain plays only), then the Designer
    samples whose window closes now: (agent samples, Designer samples, window metrics)."""
    play, design = ctx.cfg.play, ctx.cfg.design
    agent_samples = agent_samples_of(
        rollouts,
        play.negative_weight,
        by_seed=play.plays_per_seed > 1,
        token_cap=play.agent_token_cap,
        rng=random.Random(_seed(ctx.cfg, it, "agent-cap")),
    )
    state.pending, designer_samples, window_metrics = close_windows(
        it,
        design.regen_interval,
        ctx.pool,
        state.pending,
        ctx.reward_fn,
        len(agent_samples),
        design.scale_floor,
        design.scale_cap,
    )
    if not ctx.cfg.train_designer:
        designer_samples = []
    return agent_samples, designer_samples, window_metrics


def _play_metrics(
    rollouts: Sequence[Rollout], agent_samples: list[Sample], designer_samples: list[Sample]
) -> dict[str, Any]:
    """Win rates of both arms, the new designs' paired regret, episode and sample counts."""
    plain = [r for r in rollouts if not r.request.hinted]
    hinted = [r for r in rollouts if r.request.hinted]
    plain_of = {
        (r.request.program.env_id, r.request.seed, r.request.play): r.return_ for r in plain
    }
    pairs = [
        (r.return_, plain_of[key])
        for r in hinted
        if (key := (r.request.program.env_id, r.request.seed, r.request.play)) in plain_of
    ]
    return {
        "plain_win_rate": win_rate_of(r.return_ for r in plain),
        "hinted_win_rate": win_rate_of(r.return_ for r in hinted) if hinted else None,
        "episodes": len(rollouts),
        "hinted_episodes": len(hinted),
        "env_errors": sum(1 for r in rollouts if r.error),
        "mean_turns": sum(len(r.episode.turns) for r in rollouts) / max(len(rollouts), 1),
        "tokens": sum(r.tokens for r in rollouts),
        "agent_samples": len(agent_samples),
        "designer_samples": len(designer_samples),
        "update_tokens": sum(len(s.token_ids) for s in agent_samples + designer_samples),
        "agent_update_tokens": sum(len(s.token_ids) for s in agent_samples),
        "new_design_regret": paired_win_difference(pairs),
    }


def _band_shares(bands: Mapping[str, int]) -> dict[str, float]:
    return {k: bands[k] / bands["total"] if bands.get("total") else 0.0 for k in BANDS}


def _time_metrics(clock: Mapping[str, float]) -> dict[str, Any]:
    """The iteration's seconds: in all, the older sums (model, environments, overhead) and each
    `time/<phase>` of `TIME_PHASES`."""
    total = clock["iteration_s"]
    model_s = sum(clock.get(k, 0.0) for k in ("designer_sample_s", "agent_sample_s", "update_s"))
    env_s = clock.get("validate_s", 0.0) + clock.get("env_s", 0.0)
    return {
        "seconds": total,
        "model_seconds": model_s,
        "env_seconds": env_s,
        "overhead": max(0.0, total - model_s - env_s) / total,
        **{f"time/{k}": clock.get(k, 0.0) for k in TIME_PHASES},
    }


def time_totals(iterations: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each phase's seconds summed over the iterations' metrics (the run summary's `time`):
    `TIME_PHASES`, then any other `time/<phase>` a caller added to a row (an evaluation)."""
    added = (k.removeprefix("time/") for m in iterations for k in m if k.startswith("time/"))
    phases = dict.fromkeys([*TIME_PHASES, *added])
    return {k: round(sum(m.get(f"time/{k}", 0.0) for m in iterations), 3) for k in phases}


def _design_step(
    it: int, ctx: LoopContext, state: LoopState, clock: dict[str, float]
) -> tuple[list[Program], dict[str, Any]]:
    """Design, validate and admit; queue every trainable attempt as a pending Designer sample."""
    cfg, pool = ctx.cfg, ctx.pool
    d = cfg.design
    regen = (it - 1) // d.regen_interval
    rng = random.Random(_seed(cfg, it, "design"))
    skills = SkillRotation(d.skills, d.active_skills).skills_for(regen, d.envs_per_regen)
    request = DesignRequest(
        iteration=it,
        regen=regen,
        skills=tuple(skills),
        rng=rng,
        params=SamplingParams(
            max_tokens=d.max_tokens, temperature=d.temperature, seed=_seed(cfg, it, "design-sample")
        ),
        validator=cfg.validator,
        max_attempts=d.max_attempts,
        failed_reward=INVALID_DESIGN_REWARD,
        documents=ctx.documents if d.grounding else (),
        exemplars_for=lambda s: [m.program for m in pool.exemplars(s, rng, k=10)],
        negative_for=lambda s: pool.negative_example(s, rng),
        prompt_settings=ctx.prompt_settings,
        # whatever the model: a template program copied is no new environment either way
        training=warm_start_programs(ctx.prompt_settings.form),
    )
    t = time.perf_counter()
    designer = _Timed(ctx.models.designer, clock, "designer_sample_s")
    outcomes = design_and_admit(designer, ctx.sandbox, pool, ctx.run_async, request)
    new_envs = [o.attempt.program for o in outcomes if o.admitted and o.attempt.program]
    solutions, solution_errors = ctx.run_async(windows.solutions(ctx.sandbox, new_envs))
    elapsed = time.perf_counter() - t
    clock["validate_s"] = max(0.0, elapsed - clock.get("designer_sample_s", 0.0))
    for o in outcomes:
        if o.attempt.completion.trainable:
            state.pending.append(pending_item(o, solutions.get(o.env_id or "", [])))
    similarities = [o.training_similarity for o in outcomes if o.admitted]
    known = [s for s in similarities if s is not None]
    return new_envs, {
        "valid_design_rate": len(new_envs) / max(len(outcomes), 1),
        "design_attempts": len(outcomes),
        "solution_errors": solution_errors,
        "skill_mix": {s: skills.count(s) for s in sorted(set(skills))},
        "design/novelty_mean": 1.0 - sum(known) / len(known) if known else None,
        "design/copies": sum(any(f.check == TRAINING_COPY for f in o.failures) for o in outcomes),
    }


def _play_step(
    it: int, ctx: LoopContext, new_envs: list[Program], clock: dict[str, float]
) -> list[Rollout]:
    """Plain plays of the active environments; new designs also hinted, on the same seeds."""
    cfg = ctx.cfg
    base, n, k = _seed(cfg, it, "episodes"), cfg.play.plays_per_env, cfg.play.plays_per_seed
    requests = [
        PlayRequest(p, base + i // k, play=i % k)
        for p in active_set(it, cfg, ctx.pool, new_envs)
        for i in range(n)
    ]
    requests += [
        PlayRequest(p, base + i // k, hinted=True, play=i % k) for p in new_envs for i in range(n)
    ]
    params = SamplingParams(
        max_tokens=cfg.play.max_tokens,
        temperature=cfg.play.temperature,
        seed=_seed(cfg, it, "play-sample"),
    )
    t = time.perf_counter()
    rollouts: list[Rollout] = ctx.run_async(
        play(
            _Timed(ctx.models.agent, clock, "agent_sample_s"),
            ctx.sandbox,
            requests,
            params=params,
            max_turns=cfg.play.max_turns,
            max_context_tokens=cfg.model.max_context_tokens,
        )
    )
    elapsed = time.perf_counter() - t
    clock["env_s"] = max(0.0, elapsed - clock.get("agent_sample_s", 0.0))
    ctx.pool.record_episodes(
        EpisodeRow.of(
            r.episode, iteration=it, hinted=r.request.hinted, tokens=r.tokens, play=r.request.play
        )
        for r in rollouts
    )
    return rollouts


def active_set(it: int, cfg: TrainConfig, pool: Pool, new_envs: Sequence[Program]) -> list[Program]:
    """The environments played at iteration `it`: every new design, then a seeded sample of
    the rest of the pool (seeds included) up to `cfg.play.active_envs`, by `pool_sampling`."""
    others = [p for p in pool.admitted() if p not in new_envs]
    k = min(len(others), max(0, cfg.play.active_envs - len(new_envs)))
    rng = random.Random(_seed(cfg, it, "active"))
    if cfg.play.pool_sampling == "uniform":
        picked = rng.sample(others, k)
    else:
        weights = replay_weights(pool.plain_record(it - 1), [p.env_id for p in others])
        picked = [others[i] for i in weighted_sample(weights, k, rng)]
    return [*new_envs, *picked]


def _update(
    models: Models, agent_samples: list[Sample], designer_samples: list[Sample]
) -> dict[str, dict[str, float]]:
    """One update of the shared policy, or one per role with `--separate-designer`.

    A batch may be empty (every group tied and no window closed): its update is skipped."""
    if models.designer_trainer is models.agent_trainer:
        batches = {"shared": (models.agent_trainer, agent_samples + designer_samples)}
    else:
        batches = {
            "agent": (models.agent_trainer, agent_samples),
            "designer": (models.designer_trainer, designer_samples),
        }
    return {name: trainer.update(batch) for name, (trainer, batch) in batches.items() if batch}


REPLAY_PSEUDO_PLAYS = 2.0
"""Pseudo-plays at the pool's win rate added to each environment's record in `replay_weights`."""
REPLAY_FLOOR = 1e-3
"""The least weight: an environment the Agent always loses (or always wins) is still drawn now
and then, in case that changed."""


def replay_weights(
    records: dict[str, tuple[int, int]],
    env_ids: Sequence[str],
    pseudo_plays: float = REPLAY_PSEUDO_PLAYS,
) -> list[float]:
    """Learning-potential weights of `env_ids` for `pool_sampling="learnable"` (ours).

    `p (1 - p) + REPLAY_FLOOR`, with `p` an environment's plain win rate in `records` (wins,
    plays) shrunk toward the rate over all records by `pseudo_plays` (an unplayed environment
    gets that rate). `p (1 - p)` is the variance of a play's outcome: a group of plays has
    non-zero advantages, i.e. something to learn, only where it is not 0. With no record at all
    every weight is equal."""
    wins = sum(w for w, _ in records.values())
    plays = sum(n for _, n in records.values())
    prior = wins / plays if plays else 0.5
    out = []
    for env_id in env_ids:
        w, n = records.get(env_id, (0, 0))
        p = (w + pseudo_plays * prior) / (n + pseudo_plays)
        out.append(p * (1.0 - p) + REPLAY_FLOOR)
    return out


def weighted_sample(weights: Sequence[float], k: int, rng: random.Random) -> list[int]:
    """`k` distinct indices drawn with probability proportional to `weights` (Efraimidis and
    Spirakis: the k largest `log(u) / w`), in drawn order. Deterministic given rng's state."""
    if any(not w > 0 for w in weights):
        raise ValueError(f"weights must be positive, got {list(weights)}")
    keys = [math.log(1.0 - rng.random()) / w for w in weights]
    return sorted(range(len(keys)), key=lambda i: -keys[i])[:k]
