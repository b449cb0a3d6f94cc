"""The self-play loop, top to bottom: design -> validate -> pool -> play -> rewards -> update.

    spade train                         # the embedded tiny model on this machine
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

Departures from the paper's reference, on purpose: generated code only runs in the sandbox; both
arms of the regret use the same seeds and counts; failed design attempts are trained with the
lowest reward; the loop state lives in the run directory, and `--resume` continues exactly.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from spade.backends.base import Completion, Policy, Sample, SamplingParams, Trainer, episode_sample
from spade.config import TrainConfig
from spade.designer import DesignAttempt, SkillRotation, design
from spade.pool import EpisodeRow, Pool
from spade.rewards import (
    INVALID_DESIGN_REWARD,
    DesignStats,
    designer_advantages,
    designer_scale,
    group_advantages,
    hint_gate,
    win_rate_of,
)
from spade.rollout import PlayRequest, Rollout, play
from spade.sandbox import Sandbox
from spade.types import Program, Verdict
from spade.validate import validate_many

DesignerReward = Callable[[DesignStats], float]


@dataclasses.dataclass(frozen=True)
class Models:
    """The policies and trainers of each role; the same objects unless `--separate-designer`."""

    agent: Policy
    agent_trainer: Trainer
    designer: Policy
    designer_trainer: Trainer


class _Timed:
    """A Policy wrapper that adds the seconds spent sampling to a counter (for the overhead)."""

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


@dataclasses.dataclass
class LoopState:
    """Everything besides the trainer and the pool that the next iteration needs (JSON)."""

    iteration: int = 0
    """The last completed iteration."""
    pending: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Designer samples waiting for their window to close."""
    reward_state: dict[str, Any] | None = None
    """State of a stateful designer reward (learning potential)."""
    checkpoint: str | None = None


def _seed(cfg: TrainConfig, iteration: int, phase: str) -> int:
    return random.Random(f"{cfg.seed}/{iteration}/{phase}").randrange(2**31)


def run_iteration(
    it: int,
    cfg: TrainConfig,
    models: Models,
    sandbox: Sandbox,
    pool: Pool,
    state: LoopState,
    reward_fn: DesignerReward,
    documents: Sequence[dict[str, Any]],
    run_async: Callable[[Any], Any],
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """One iteration; returns its metrics. Writes pool records; the caller checkpoints."""
    clock: dict[str, float] = {}
    started = time.perf_counter()
    metrics: dict[str, Any] = {"iteration": it}
    d = cfg.design
    regen = (it - 1) // d.regen_interval
    designing = not cfg.no_design and (it - 1) % d.regen_interval == 0
    rng = random.Random(_seed(cfg, it, "design"))
    new_envs: list[Program] = []

    # 1-2. design and validate
    if designing:
        progress("design")
        skills = SkillRotation(d.skills, d.active_skills).skills_for(regen, d.envs_per_regen)
        attempts = design(
            _Timed(models.designer, clock, "model_s"),
            iteration=it,
            regen=regen,
            skills_per_env=skills,
            rng=rng,
            documents=documents if d.grounding else (),
            exemplars_for=lambda s: [m.program for m in pool.exemplars(s, rng, k=10)],
            negative_for=lambda s: pool.negative_example(s, rng),
            params=SamplingParams(
                max_tokens=d.max_tokens,
                temperature=d.temperature,
                seed=_seed(cfg, it, "design-sample"),
            ),
            difficulty_word=d.difficulty_word,
            budget_chars=d.prompt_budget_chars,
            separate_hint=d.separate_hint,
        )
        progress("validate")
        t = time.perf_counter()
        programs = [a.program for a in attempts if a.program is not None]
        verdicts = run_async(validate_many(programs, sandbox, cfg.validator, pool.admitted()))
        clock["env_s"] = clock.get("env_s", 0.0) + time.perf_counter() - t
        by_id = dict(zip((p.env_id for p in programs), verdicts))
        new_envs = _admit(it, regen, attempts, by_id, pool, state)
        solutions = run_async(_solutions(sandbox, new_envs))
        for item in state.pending:
            if item["iteration"] == it and item["env_id"] in solutions:
                item["solution"] = solutions[item["env_id"]]
        metrics["valid_design_rate"] = len(new_envs) / max(len(attempts), 1)
        metrics["skill_mix"] = {s: skills.count(s) for s in sorted(set(skills))}

    # 3. play
    progress("play")
    # new designs first, then a seeded sample of the rest of the pool (seeds included)
    others = [p for p in pool.admitted() if p not in new_envs]
    picked = random.Random(_seed(cfg, it, "active")).sample(
        others, min(len(others), max(0, cfg.play.active_envs - len(new_envs)))
    )
    active = new_envs + picked
    base = _seed(cfg, it, "episodes")
    requests = [PlayRequest(p, base + i) for p in active for i in range(cfg.play.plays_per_env)]
    requests += [
        PlayRequest(p, base + i, hinted=True)
        for p in new_envs
        for i in range(cfg.play.plays_per_env)
    ]
    params = SamplingParams(
        max_tokens=cfg.play.max_tokens,
        temperature=cfg.play.temperature,
        seed=_seed(cfg, it, "play-sample"),
    )
    t, model_before = time.perf_counter(), clock.get("model_s", 0.0)
    rollouts: list[Rollout] = run_async(
        play(
            _Timed(models.agent, clock, "model_s"),
            sandbox,
            requests,
            params=params,
            max_turns=cfg.play.max_turns,
            max_context_tokens=cfg.model.max_context_tokens,
        )
    )
    sampling = clock.get("model_s", 0.0) - model_before
    clock["env_s"] = clock.get("env_s", 0.0) + time.perf_counter() - t - sampling
    pool.record_episodes(
        EpisodeRow.of(r.episode, iteration=it, hinted=r.request.hinted, tokens=r.tokens)
        for r in rollouts
    )

    # 4. score: Agent advantages per environment group (plain plays only), then Designer rewards
    agent_samples = _agent_samples(rollouts)
    designer_samples, design_metrics = _close_windows(
        it, cfg, pool, state, reward_fn, len(agent_samples)
    )
    metrics.update(design_metrics)

    # 5. update
    progress("update")
    t = time.perf_counter()
    # a batch may be empty: every group tied (all won or all lost) and no window closed
    if models.designer_trainer is models.agent_trainer:
        batches = {"shared": (models.agent_trainer, agent_samples + designer_samples)}
    else:
        batches = {
            "agent": (models.agent_trainer, agent_samples),
            "designer": (models.designer_trainer, designer_samples),
        }
    losses = {name: trainer.update(batch) for name, (trainer, batch) in batches.items() if batch}
    clock["model_s"] = clock.get("model_s", 0.0) + time.perf_counter() - t

    plain = [r for r in rollouts if not r.request.hinted]
    hinted = [r for r in rollouts if r.request.hinted]
    bands = pool.record_bands(it)
    total = time.perf_counter() - started
    metrics.update(
        plain_win_rate=win_rate_of(r.return_ for r in plain),
        hinted_win_rate=win_rate_of(r.return_ for r in hinted) if hinted else None,
        episodes=len(rollouts),
        env_errors=sum(1 for r in rollouts if r.error),
        mean_turns=sum(len(r.episode.turns) for r in rollouts) / max(len(rollouts), 1),
        tokens=sum(r.tokens for r in rollouts),
        agent_samples=len(agent_samples),
        designer_samples=len(designer_samples),
        bands=bands,
        loss=losses,
        seconds=total,
        model_seconds=clock.get("model_s", 0.0),
        env_seconds=clock.get("env_s", 0.0),
        overhead=max(0.0, total - clock.get("model_s", 0.0) - clock.get("env_s", 0.0)) / total,
    )
    return metrics


def _admit(
    it: int,
    regen: int,
    attempts: Sequence[DesignAttempt],
    verdicts: dict[str, Verdict],
    pool: Pool,
    state: LoopState,
) -> list[Program]:
    """Record every attempt; admit valid programs; queue every trainable attempt as a sample."""
    admitted: list[Program] = []
    with pool.transaction():
        for a in attempts:
            verdict = verdicts.get(a.program.env_id) if a.program else None
            ok = bool(verdict and verdict.admitted and a.program)
            failures = list(verdict.failures) if verdict else [a.error or "no program"]
            env_id = a.program.env_id if (ok and a.program) else None
            if ok and a.program is not None and verdict is not None:
                provenance = {
                    "exemplars": list(a.exemplar_ids),
                    "grounding": a.document_title,
                    "regen": regen,
                    "attempt": a.attempt_index,
                }
                if pool.add_program(a.program, verdict, it, provenance):
                    admitted.append(a.program)
                else:
                    ok, env_id, failures = False, None, ["duplicate of a pool environment"]
            pool.record_attempt(
                it,
                regen,
                a.skill,
                a.attempt_index,
                env_id=env_id,
                admitted=ok,
                failures=failures,
                reward=None if ok else INVALID_DESIGN_REWARD,
            )
            if a.completion.trainable:
                sample = episode_sample([a.completion], 0.0, "designer")
                state.pending.append(
                    {
                        "iteration": it,
                        "regen": regen,
                        "skill": a.skill,
                        "env_id": env_id,
                        "hint": a.program.hint if a.program else "",
                        "solution": [],
                        "token_ids": list(sample.token_ids),
                        "loss_mask": list(sample.loss_mask),
                        "logprobs": list(sample.logprobs),
                        "temperature": sample.temperature,
                    }
                )
    return admitted


async def _solutions(sandbox: Sandbox, programs: Sequence[Program]) -> dict[str, list[str]]:
    """solution() replies at seed 0, for the hint gate (a hint must not contain them)."""
    out: dict[str, list[str]] = {}
    for program in programs:
        try:
            session = await sandbox.open(program.code)
            try:
                await session.reset(0)
                value = await session.solution()
            finally:
                await session.close()
        except Exception:  # noqa: BLE001 - an admitted program failing now just has no solution
            value = None
        value = [value] if isinstance(value, str) else value
        if isinstance(value, list):
            out[program.env_id] = [str(v) for v in value][:100]
    return out


def _agent_samples(rollouts: Sequence[Rollout]) -> list[Sample]:
    groups: dict[str, list[Rollout]] = {}
    for r in rollouts:
        if not r.request.hinted and not r.error and r.completions:
            groups.setdefault(r.request.program.env_id, []).append(r)
    samples = []
    for group in groups.values():
        advantages = group_advantages([r.return_ for r in group])
        for r, advantage in zip(group, advantages):
            if advantage != 0.0 and all(c.trainable for c in r.completions):
                samples.append(episode_sample(r.completions, advantage, "agent"))
    return samples


def _close_windows(
    it: int, cfg: TrainConfig, pool: Pool, state: LoopState, reward_fn: DesignerReward, n_agent: int
) -> tuple[list[Sample], dict[str, Any]]:
    """Reward the pending Designer samples whose window ends at `it`."""
    closing = [p for p in state.pending if p["iteration"] + cfg.design.regen_interval - 1 <= it]
    if not closing:
        return [], {}
    state.pending = [p for p in state.pending if p not in closing]
    rewards, regrets = [], []
    for item in closing:
        if item["env_id"] is None:
            rewards.append(INVALID_DESIGN_REWARD)
            continue
        hinted, plain = pool.paired_returns(item["env_id"], item["iteration"])
        window = pool.returns(item["env_id"], since_iteration=item["iteration"], until_iteration=it)
        reason = (
            hint_gate(item["hint"], item["solution"], win_rate_of(plain)) if plain else "unplayed"
        )
        stats = DesignStats(
            item["env_id"],
            item["skill"],
            item["regen"],
            item["hint"],
            tuple(hinted),
            tuple(plain),
            tuple(window),
            reason is None,
        )
        reward = reward_fn(stats)
        rewards.append(reward)
        regret = stats.regret if hinted and len(hinted) == len(plain) else None
        if regret is not None:
            regrets.append(regret)
        pool.record_designer_reward(
            item["env_id"],
            item["regen"],
            it,
            reward,
            win_rate=stats.win_rate,
            regret=regret,
            plain_mean=sum(plain) / len(plain) if plain else None,
            hinted_mean=sum(hinted) / len(hinted) if hinted else None,
            hint_ok=reason is None,
            hint_reason=reason,
        )
    scale = designer_scale(n_agent, len(closing), cfg.design.regen_interval)
    advantages = designer_advantages(rewards, [(p["skill"], p["regen"]) for p in closing], scale)
    samples = [
        Sample(
            tuple(p["token_ids"]),
            tuple(p["loss_mask"]),
            tuple(p["logprobs"]),
            adv,
            "designer",
            p["temperature"],
        )
        for p, adv in zip(closing, advantages)
        if adv != 0.0
    ]
    metrics = {
        "designer_reward": sum(rewards) / len(rewards),
        "regret": sum(regrets) / len(regrets) if regrets else None,
        "designer_scale": scale,
    }
    return samples, metrics


# --- run directory ----------------------------------------------------------------------------


def save_state(run_dir: Path, state: LoopState) -> None:
    """Atomically replace state.json (a kill leaves the old or the new file, never half)."""
    tmp = run_dir / "state.json.tmp"
    tmp.write_text(json.dumps(dataclasses.asdict(state)))
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, run_dir / "state.json")


def load_state(run_dir: Path) -> LoopState:
    path = run_dir / "state.json"
    return LoopState(**json.loads(path.read_text())) if path.exists() else LoopState()


def checkpoint(
    run_dir: Path, it: int, models: Models, state: LoopState, metrics: dict[str, Any]
) -> None:
    """Trainer state first, then metrics, then state.json (which commits the iteration)."""
    ckpt = run_dir / "checkpoints" / f"iter-{it:05d}"
    if ckpt.exists():
        shutil.rmtree(ckpt)
    models.agent_trainer.save(ckpt / "agent")
    if models.designer_trainer is not models.agent_trainer:
        models.designer_trainer.save(ckpt / "designer")
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write(json.dumps(metrics) + "\n")
    previous = state.checkpoint
    state.iteration, state.checkpoint = it, str(ckpt.relative_to(run_dir))
    save_state(run_dir, state)
    if previous and previous != state.checkpoint:
        shutil.rmtree(run_dir / previous, ignore_errors=True)


def restore(run_dir: Path, models: Models, pool: Pool) -> LoopState:
    """Load the last committed iteration; drop whatever a killed iteration left behind."""
    state = load_state(run_dir)
    if state.checkpoint:
        models.agent_trainer.load(run_dir / state.checkpoint / "agent")
        if models.designer_trainer is not models.agent_trainer:
            models.designer_trainer.load(run_dir / state.checkpoint / "designer")
    pool.truncate_after(state.iteration)
    metrics = run_dir / "metrics.jsonl"
    if metrics.exists():
        lines = [
            ln
            for ln in metrics.read_text().splitlines()
            if ln.strip() and json.loads(ln)["iteration"] <= state.iteration
        ]
        metrics.write_text("".join(ln + "\n" for ln in lines))
    for stale in (
        (run_dir / "checkpoints").glob("iter-*") if (run_dir / "checkpoints").exists() else ()
    ):
        if state.checkpoint is None or stale.name != Path(state.checkpoint).name:
            shutil.rmtree(stale, ignore_errors=True)
    return state
