"""Warm start (`spade bootstrap`): supervised fine-tuning of a model on both roles' examples.

    from spade.warmstart.finetune import bootstrap
    path = bootstrap(model="smollm2")                        # -> a cached model folder
    LocalBackend(LocalConfig(model=str(path)))

The examples come from `spade.warmstart.data` (the default builder, `warm_start_examples`, for the
recipe's Designer form) or from the caller. They are tokenized the way the loop trains,
token-in/token-out: a Designer sequence is a prompt and one reply, an Agent sequence is one whole
episode with only its replies trained. The result is cached under the model cache, keyed by the
base model, the examples and the hyper-parameters; `spade_bootstrap.json` in it records steps,
tokens, time and the final NLL.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.backends.base import Message, PPOConfig, Role, Sample
from spade.warmstart.data import Example, source_fingerprint, warm_start_examples


def _encode_all(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text; repeated texts (prompts) are encoded once, in batched calls."""
    from spade.backends import chat

    unique = list(dict.fromkeys(texts))
    ids: dict[str, list[int]] = {}
    for start in range(0, len(unique), 512):
        chunk = unique[start : start + 512]
        for text, encoded in zip(chunk, tokenizer(chunk, add_special_tokens=False)["input_ids"]):
            ids[text] = list(encoded)
    if unique and ids[unique[0]] != chat.encode(tokenizer, unique[0]):  # batch == one by one
        raise AssertionError("batched tokenization differs from chat.encode")
    return [ids[t] for t in texts]


@dataclass(frozen=True)
class _Sequence:
    """One training sequence: token ids and a loss mask (1 = trained). A Designer sequence is a
    prompt and one reply; an Agent sequence is one episode, the replies of all its turns trained
    and the prompt and later observations between them not (as the loop builds a multi-turn
    sample, token-in/token-out)."""

    ids: tuple[int, ...]
    mask: tuple[int, ...]
    role: Role

    @property
    def tokens(self) -> int:
        return len(self.ids)


def _message_key(messages: Sequence[Message]) -> str:
    return json.dumps([[m["role"], str(m["content"])] for m in messages])


def _chains(agent: Sequence[Example]) -> list[list[Example]]:
    """Agent examples chained into episodes: an example continues another when its messages are
    the other's messages, the other's reply and one more observation."""
    successors: dict[str, list[Example]] = {}
    for e in agent:
        msgs = e.messages
        if len(msgs) >= 3 and msgs[-2]["role"] == "assistant" and msgs[-1]["role"] == "user":
            key = _message_key(msgs[:-2]) + "\x00" + str(msgs[-2]["content"])
            successors.setdefault(key, []).append(e)
    keys = {_message_key(e.messages) + "\x00" + e.target for e in agent}
    chains: list[list[Example]] = []
    for e in agent:
        msgs = e.messages
        if len(msgs) >= 3 and msgs[-2]["role"] == "assistant":
            if _message_key(msgs[:-2]) + "\x00" + str(msgs[-2]["content"]) in keys:
                continue  # continues another example: not the start of a chain
        chain = [e]
        while nxt := successors.get(_message_key(chain[-1].messages) + "\x00" + chain[-1].target):
            chain.append(nxt.pop(0))
        chains.append(chain)
    return chains


def _sequences(
    data: Sequence[Example], tokenizer: Any, eot_ids: set[int], max_length: int
) -> tuple[list[_Sequence], int]:
    """The training sequences of `data` and the number of examples dropped for length."""
    from spade.backends import chat

    eot = min(eot_ids)
    designer = [e for e in data if e.role == "designer"]
    chains = _chains([e for e in data if e.role != "designer"])
    texts = [chat.render(tokenizer, e.messages, True) for e in designer]
    texts += [chat.render(tokenizer, c[0].messages, True) for c in chains]
    texts += [e.target for e in designer] + [e.target for c in chains for e in c]
    encoded = iter(_encode_all(tokenizer, texts))
    prompts = [next(encoded) for _ in designer]
    chain_prompts = [next(encoded) for _ in chains]
    replies = [next(encoded) for _ in designer]
    chain_replies = [[next(encoded) for _ in c] for c in chains]

    out: list[_Sequence] = []
    dropped = 0
    for prompt, reply in zip(prompts, replies):
        if len(prompt) + len(reply) + 1 > max_length:
            dropped += 1
            continue
        ids = (*prompt, *reply, eot)
        out.append(_Sequence(ids, (0,) * len(prompt) + (1,) * (len(reply) + 1), "designer"))
    for chain, prompt, turns in zip(chains, chain_prompts, chain_replies):
        seq, mask = list(prompt), [0] * len(prompt)
        for i, (e, reply) in enumerate(zip(chain, turns)):
            delta = chat.turn_delta_ids(tokenizer, seq[-1:], e.messages[-1:], eot_ids) if i else []
            if len(seq) + len(delta) + len(reply) + 1 > max_length:
                dropped += len(chain) - i
                break
            seq += [*delta, *reply, eot]
            mask += [0] * len(delta) + [1] * (len(reply) + 1)
        if any(mask):
            out.append(_Sequence(tuple(seq), tuple(mask), chain[0].role))
    return out, dropped


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
    form: str = "compact",
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
    import shutil

    from spade.backends.local import LocalBackend, LocalConfig
    from spade.backends.tiny import cache_dir
    from spade.backends.torch_setup import (
        LoraSettings,
        model_path,
        resolve_device,
        resolve_precision,
    )

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    built = time.monotonic()
    data: list[Example] | None = None
    if examples is not None:
        data = list(examples() if callable(examples) else examples)
        if not data:
            raise ValueError("no bootstrap examples")
    base = model_path(model, progress=progress)
    key = _cache_key(
        base,
        resolve_precision(precision, resolve_device("auto")),
        f"warm_start_examples:{form}:" + source_fingerprint() if data is None else _hash(data),
        [steps, learning_rate, batch_tokens, max_length, designer_share],
        [lora_rank, trainable_layers, prompt_gradient, seed],
    )
    target = Path(output) if output else cache_dir() / "models" / f"{Path(base).name}-boot-{key}"
    meta_path = target / "spade_bootstrap.json"
    if meta_path.exists() and json.loads(meta_path.read_text()).get("finished") and not force:
        return target
    if data is None:
        _say(progress, f"bootstrap: building the warm-start data ({form} form) for {target.name}")
        data = list(warm_start_examples(seed=seed, form=form))
    backend = LocalBackend(
        LocalConfig(
            model=base,
            seed=seed,
            precision=precision,
            lora=LoraSettings(r=lora_rank) if lora_rank else None,
            trainable_layers=None if lora_rank else trainable_layers,
            ppo=PPOConfig(
                learning_rate=learning_rate,
                weight_decay=0.01,
                betas=(0.9, 0.95),
                micro_batch_tokens=min(batch_tokens, 8192),
            ),
        )
    )

    sequences, dropped = _sequences(data, backend.tokenizer, backend.eot_ids, max_length)
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
    partial = target.with_name(target.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    backend.export(partial)
    meta = {
        "base_model": backend.model_path,
        "form": form if examples is None else None,
        "lora_rank": lora_rank,
        "trainable_layers": trainable_layers,
        "prompt_gradient": prompt_gradient,
        "precision": backend.precision,
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
    (partial / meta_path.name).write_text(json.dumps(meta, indent=2))
    if target.exists():  # an unfinished or forced-over earlier result
        shutil.rmtree(target)
    partial.rename(target)
    _say(progress, f"bootstrap: {step} steps in {meta['seconds']:.0f} s, final NLL {nll:.3f}")
    return target


def _hash(data: Sequence[Example]) -> str:
    rows = [[list(e.messages), e.target, e.role] for e in data]
    return hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()


def _cache_key(
    base: str, precision: str, data_hash: str, schedule: list[Any], model: list[Any]
) -> str:
    """The cached model's name: base model (folder and tokenizer files), precision, data and
    hyper-parameters (`schedule`: steps, lr, batch and length limits, designer share;
    `model`: LoRA rank, trainable layers, prompt gradient, seed)."""
    parts = [base, _folder_fingerprint(base), precision, data_hash, *schedule, *model]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


class _RoleMixer:
    """Draws sequences so that `designer_share` of the tokens drawn are Designer turns: each
    draw takes the role furthest below its share, from that role's reshuffled queue."""

    def __init__(self, sequences: Sequence[_Sequence], designer_share: float, rng: random.Random):
        self.share, self.rng = designer_share, rng
        self.pools: dict[str, list[_Sequence]] = {
            role: [q for q in sequences if q.role == role] for role in ROLES
        }
        self.queues: dict[str, list[_Sequence]] = {role: [] for role in ROLES}
        self.drawn: dict[str, int] = {role: 0 for role in ROLES}
        self.seen: dict[str, int] = {role: 0 for role in ROLES}

    def draw(self) -> _Sequence:
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

    def batch(self, batch_tokens: int) -> list[_Sequence]:
        """At least one sequence and about `batch_tokens` tokens; the sequence that would
        overflow is put back for the next batch."""
        batch: list[_Sequence] = []
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
