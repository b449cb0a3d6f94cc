"""Warm start (`spade bootstrap`): supervised fine-tuning of a model on both roles' examples.

    from spade.warmstart.finetune import bootstrap
    path = bootstrap(model="smollm2")                        # -> a cached model folder
    LocalBackend(LocalConfig(model=str(path)))

The examples come from `spade.warmstart.data` (the default builder, `warm_start_examples`, for the
recipe's Designer form) or from the caller. They are tokenized the way the loop trains,
token-in/token-out (`spade.warmstart.sequences`): a Designer sequence is a prompt and one reply,
an Agent sequence is one whole episode with only its replies trained. The result is cached under
the model cache, keyed by the base model, the examples and the hyper-parameters;
`spade_bootstrap.json` in it records steps, tokens, time and the final NLL.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from spade.backends.base import PPOConfig, Role, Sample
from spade.types import COMPACT, Form
from spade.warmstart.data import Example, source_fingerprint, warm_start_examples
from spade.warmstart.sequences import TrainingSequence, training_sequences

ROLES: tuple[Role, ...] = ("designer", "agent")

DEFAULT_STEPS = 240
"""Optimizer steps of the default warm start (docs/warmstart.md: what it reaches, how long)."""

DEFAULT_DESIGNER_SHARE = 0.33
"""Share of the warm start's tokens that are Designer turns. 0.8 left the Agent ~20% of the
tokens, mostly `solution()` replays, and it answered "What is 7 + 7?" with `\\boxed{18}`. At
160 steps and half the tokens the Agent reached 57% on the near set; 240 steps with a third
for the Designer (the same ~80 steps' worth of Designer tokens, twice the Agent's) reached 70%,
and its self-play runs gained more (docs/warmstart.md, docs/replication.md)."""


def bootstrap(
    model: str = "smollm2",
    *,
    examples: Sequence[Example] | Callable[[], Sequence[Example]] | None = None,
    form: Form = COMPACT,
    steps: int = DEFAULT_STEPS,
    learning_rate: float = 3e-4,
    batch_tokens: int = 2048,
    max_length: int = 6144,
    designer_share: float = DEFAULT_DESIGNER_SHARE,
    precision: str = "auto",
    lora_rank: int = 0,
    trainable_layers: int | None = 10,
    prompt_gradient: bool = False,
    seed: int = 0,
    output: str | Path | None = None,
    force: bool = False,
    progress: bool = True,
) -> Path:
    """Fine-tune `model` on the examples; return the folder of the result (cached unless `force`).

    `examples` None: the default builder, `warm_start_examples(seed, form)`, for the Designer
    form of the recipe the result will run (`spade.prompts.FORMS`). Each step is one AdamW
    step (betas 0.9/0.95) over at least one sequence and about `batch_tokens` tokens (about three
    programs by default). `trainable_layers` (default 10 of the default model's 30; None: every
    weight; ignored with LoRA) trains only the top of the decoder: the backward pass stops there,
    which doubles the tokens per second on a CPU, and a 5-minute warm start is bound by how many
    programs it sees (docs/warmstart.md). Sequences are drawn so that `designer_share` of the
    tokens are Designer turns (writing code is the hard part); sequences longer than
    `max_length` tokens are dropped.
    Training makes exactly `steps` optimizer steps (5% warm-up, cosine decay): the budget is
    counted in steps, never in minutes, so the same call gives the same weights on a quiet
    machine and on a busy one (the time is reported, not used to decide; docs/warmstart.md).
    `prompt_gradient=False` (the default) runs each prompt forward
    without gradient (`LocalBackend.sft_step`): 1.5x more sequences per second here (AMD EPYC,
    400-token prompt, 250-token reply). `lora_rank` > 0 trains LoRA adapters of that rank instead
    of all
    weights (merged into the saved model). `spade_bootstrap.json` in the result records the
    steps, tokens, seconds and final NLL.

    The cache key holds the base model (its folder and tokenizer files), the precision, the
    examples (their hash, or for the default builder a hash of the files it reads: templates,
    seeds, corpus, prompts, scaffolds) and the hyper-parameters, so a cached model is found
    without loading the base model or building the data.
    """
    from spade.backends.torch_setup import model_path

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    built = time.monotonic()
    data = _given_examples(examples)
    base = model_path(model, progress=progress)
    schedule = _Schedule(steps, learning_rate, batch_tokens, max_length, designer_share)
    settings = [lora_rank, trainable_layers, prompt_gradient, seed]
    target = _target(base, precision, data, form, schedule, settings, output)
    if _finished(target) and not force:
        return target
    if data is None:
        _say(progress, f"bootstrap: building the warm-start data ({form} form) for {target.name}")
        data = list(warm_start_examples(seed=seed, form=form))
    backend = _backend(base, seed, precision, lora_rank, trainable_layers, schedule)
    meta: dict[str, Any] = {
        "base_model": backend.model_path,
        "form": form if examples is None else None,
        "lora_rank": lora_rank,
        "trainable_layers": trainable_layers,
        "prompt_gradient": prompt_gradient,
        "precision": backend.precision,
    }
    meta |= _fine_tune(backend, data, schedule, prompt_gradient, seed, built, progress)
    _write_result(backend, target, meta)
    line = "bootstrap: {steps} steps in {seconds:.0f} s, final NLL {final_nll:.3f}"
    _say(progress, line.format(**meta))
    return target


class _Schedule(NamedTuple):
    """What a warm start trains for, in the cache key's order."""

    steps: int
    learning_rate: float
    batch_tokens: int
    max_length: int
    designer_share: float


def _given_examples(
    examples: Sequence[Example] | Callable[[], Sequence[Example]] | None,
) -> list[Example] | None:
    """The caller's examples (built now if `examples` is a builder), or None for the default."""
    if examples is None:
        return None
    data = list(examples() if callable(examples) else examples)
    if not data:
        raise ValueError("no bootstrap examples")
    return data


def _target(
    base: str,
    precision: str,
    data: Sequence[Example] | None,
    form: Form,
    schedule: _Schedule,
    settings: list[Any],
    output: str | Path | None,
) -> Path:
    """The result's folder: `output`, else the model cache's folder named by the cache key
    (`_cache_key`; `data` None: the default builder for `form`, keyed by its source files)."""
    from spade.backends.tiny import cache_dir
    from spade.backends.torch_setup import resolve_device, resolve_precision

    key = _cache_key(
        base,
        resolve_precision(precision, resolve_device("auto")),
        f"warm_start_examples:{form}:" + source_fingerprint() if data is None else _hash(data),
        schedule,
        settings,
    )
    return Path(output) if output else cache_dir() / "models" / f"{Path(base).name}-boot-{key}"


def _finished(target: Path) -> bool:
    """Whether `target` holds a finished warm start (its `spade_bootstrap.json` says so)."""
    meta_path = target / "spade_bootstrap.json"
    return meta_path.exists() and bool(json.loads(meta_path.read_text()).get("finished"))


def _backend(
    base: str,
    seed: int,
    precision: str,
    lora_rank: int,
    trainable_layers: int | None,
    schedule: _Schedule,
) -> Any:
    """The local backend the warm start trains: AdamW with betas 0.9/0.95 and weight decay
    0.01 at the schedule's learning rate, micro-batches of at most the schedule's batch tokens
    (8,192 at most), LoRA of `lora_rank` (0: none) or else the top `trainable_layers`."""
    from spade.backends.local import LocalBackend, LocalConfig
    from spade.backends.torch_setup import LoraSettings

    return LocalBackend(
        LocalConfig(
            model=base,
            seed=seed,
            precision=precision,
            lora=LoraSettings(r=lora_rank) if lora_rank else None,
            trainable_layers=None if lora_rank else trainable_layers,
            ppo=PPOConfig(
                learning_rate=schedule.learning_rate,
                weight_decay=0.01,
                betas=(0.9, 0.95),
                micro_batch_tokens=min(schedule.batch_tokens, 8192),
            ),
        )
    )


def _fine_tune(
    backend: Any,
    data: Sequence[Example],
    schedule: _Schedule,
    prompt_gradient: bool,
    seed: int,
    built: float,
    progress: bool,
) -> dict[str, Any]:
    """Tokenize `data` into sequences (dropping those over the schedule's `max_length`) and
    train `backend` on them for the schedule (`_train`); returns what `spade_bootstrap.json`
    records of the training (`built`: when the data building started)."""
    steps, learning_rate, batch_tokens, max_length, designer_share = schedule
    sequences, dropped = training_sequences(data, backend.tokenizer, backend.eot_ids, max_length)
    if not sequences:
        raise ValueError(f"every example is longer than max_length={max_length} tokens")
    build_seconds = time.monotonic() - built
    counts = {role: sum(q.role == role for q in sequences) for role in ROLES}
    _say(
        progress,
        f"bootstrap: {counts['designer']} Designer and {counts['agent']} Agent sequences "
        f"({dropped} too long) in {build_seconds:.0f} s; training",
    )
    mixer = _RoleMixer(sequences, designer_share, random.Random(seed))
    start = time.monotonic()
    step, nll, tokens = _train(
        backend, mixer, steps, learning_rate, batch_tokens, prompt_gradient, progress
    )
    return {
        "steps": step,
        "finished": True,
        "sequences": {role: len(pool) for role, pool in mixer.pools.items()},
        "dropped_longer_than_max_length": dropped,
        "sequences_seen": mixer.seen,
        "tokens_seen": tokens,
        "data_seconds": round(build_seconds, 1),
        "seconds": round(time.monotonic() - start, 1),
        "final_nll": nll,
    }


def _write_result(backend: Any, target: Path, meta: dict[str, Any]) -> None:
    """Export the trained model with `spade_bootstrap.json` into `target`, through a
    `.partial` folder renamed at the end (replacing an unfinished or forced-over result)."""
    import shutil

    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    backend.export(partial)
    (partial / "spade_bootstrap.json").write_text(json.dumps(meta, indent=2))
    if target.exists():  # an unfinished or forced-over earlier result
        shutil.rmtree(target)
    partial.rename(target)


def _hash(data: Sequence[Example]) -> str:
    rows = [[list(e.messages), e.target, e.role] for e in data]
    return hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()


def _cache_key(
    base: str, precision: str, data_hash: str, schedule: Sequence[Any], model: Sequence[Any]
) -> str:
    """The cached model's name: base model (folder and tokenizer files), precision, data and
    hyper-parameters (`schedule`: steps, lr, batch and length limits, designer share;
    `model`: LoRA rank, trainable layers, prompt gradient, seed)."""
    parts = [base, _folder_fingerprint(base), precision, data_hash, *schedule, *model]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


class _RoleMixer:
    """Draws sequences so that `designer_share` of the tokens drawn are Designer turns: each
    draw takes the role furthest below its share, from that role's reshuffled queue."""

    def __init__(
        self, sequences: Sequence[TrainingSequence], designer_share: float, rng: random.Random
    ):
        self.share, self.rng = designer_share, rng
        self.pools: dict[str, list[TrainingSequence]] = {
            role: [q for q in sequences if q.role == role] for role in ROLES
        }
        self.queues: dict[str, list[TrainingSequence]] = {role: [] for role in ROLES}
        self.drawn: dict[str, int] = {role: 0 for role in ROLES}
        self.seen: dict[str, int] = {role: 0 for role in ROLES}

    def draw(self) -> TrainingSequence:
        total = max(sum(self.drawn.values()), 1)
        role = "designer" if self.drawn["designer"] / total <= self.share else "agent"
        if not self.pools[role]:
            role = "agent" if role == "designer" else "designer"
        if not self.queues[role]:
            self.queues[role] = list(self.pools[role])
            self.rng.shuffle(self.queues[role])
        seq = self.queues[role].pop()
        self.drawn[role] += seq.tokens
        return seq

    def batch(self, batch_tokens: int) -> list[TrainingSequence]:
        """At least one sequence and about `batch_tokens` tokens; the sequence that would
        overflow is put back for the next batch."""
        batch: list[TrainingSequence] = []
        used = 0
        while used < batch_tokens:
            seq = self.draw()
            if batch and used + seq.tokens > batch_tokens:
                self.queues[seq.role].append(seq)
                self.drawn[seq.role] -= seq.tokens
                break
            batch.append(seq)
            used += seq.tokens
            self.seen[seq.role] += 1
        return batch


def _train(
    backend: Any,
    mixer: _RoleMixer,
    steps: int,
    learning_rate: float,
    batch_tokens: int,
    prompt_gradient: bool,
    progress: bool,
) -> tuple[int, float, int]:
    """`steps` SFT steps (5% warm-up, cosine decay); returns (steps taken, smoothed NLL,
    tokens seen)."""
    nll, tokens = float("nan"), 0
    bar = _Progress(steps, enabled=progress)
    for step in range(1, steps + 1):
        batch = mixer.batch(batch_tokens)
        tokens += sum(q.tokens for q in batch)
        p = (step - 1) / steps
        lr = learning_rate * (p / 0.05 if p < 0.05 else 0.5 * (1 + math.cos(math.pi * p)))
        for param_group in backend.optimizer.param_groups:
            param_group["lr"] = max(lr, learning_rate * 1e-3)
        loss = backend.sft_step(
            [Sample(q.ids, q.mask, (0.0,) * len(q.ids), 1.0, q.role) for q in batch],
            prompt_gradient=prompt_gradient,
        )["nll"]
        nll = loss if step == 1 else 0.9 * nll + 0.1 * loss  # smoothed for display
        bar.update(step, nll)
    bar.close()
    return steps, nll, tokens


def _say(enabled: bool, line: str) -> None:
    if enabled:
        print(line, file=sys.stderr, flush=True)


def _folder_fingerprint(path: str) -> str:
    """Hash of a model folder's config and tokenizer files ("" for a hub id)."""
    folder = Path(path)
    h = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        if (folder / name).is_file():
            h.update(name.encode() + hashlib.sha256((folder / name).read_bytes()).digest())
    return h.hexdigest() if folder.is_dir() else ""


class _Progress:
    """A rich progress bar over the step budget with elapsed time and ETA on a terminal, else
    (rich missing, output to a file or pipe) a line on stderr every 5% with the ETA."""

    def __init__(self, steps: int, enabled: bool, label: str = "bootstrap") -> None:
        self.enabled, self.bar, self.task, self.last = enabled, None, None, -1
        self.steps, self.label, self.started = steps, label, time.monotonic()
        if not enabled or not sys.stderr.isatty():
            return
        try:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn(label),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("nll {task.fields[nll]:.3f}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
            )
            self.task = self.bar.add_task(label, total=steps, nll=float("nan"))
            self.bar.start()
        except ImportError:
            pass

    def update(self, step: int, nll: float) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=step, nll=nll)
        elif self.enabled and int(step / self.steps * 20) > self.last:
            self.last = int(step / self.steps * 20)
            elapsed = time.monotonic() - self.started
            eta = elapsed / step * (self.steps - step)
            line = (
                f"{self.label} step {step}/{self.steps} nll {nll:.3f} "
                f"{elapsed:.0f} s, eta {eta:.0f} s"
            )
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
