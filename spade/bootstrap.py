"""Warm start (`spade bootstrap`): supervised fine-tuning of a model on environments.

    from spade.backends.bootstrap import bootstrap
    path = bootstrap(model="smollm2")                        # -> a cached model folder
    LocalBackend(LocalConfig(model=str(path)))

Self-play cannot start from zero reward: a model that never writes a valid environment or wins an
episode gives the loop nothing to learn from. The default data (`warm_start_examples`) is:

- Designer turns: the Designer prompt the loop renders (skill, difficulty word, a random grounding
  document, the embedded model's prompt budget) -> the code and hint of an environment, for
  ~3,000 programs rendered from the parametric families in `spade.templates` (structural and
  parameter variants, each valid) plus the bundled seeds, with the constructor's default
  difficulty set to the prompt's level;
- Agent turns: an observation (with the conversation so far) -> the next reply of `solution()`,
  recorded by replaying the solutions of the seeds and of some template programs in a child
  process.

The prompt formats belong to spade.prompts; they enter here as functions (`ExampleFormat`,
default `prompts_format()`), and the whole data builder can be replaced (`examples=`). The result
is cached under the model cache, keyed by the base model, the examples and the hyper-parameters.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from spade.backends.base import Message, Role

PACKAGE_PARENT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Example:
    """One supervised example: continue `messages` with `target` (the only trained tokens)."""

    messages: tuple[Message, ...]
    target: str
    role: Role


class DesignerPromptFn(Protocol):
    def __call__(
        self, skill: str, difficulty: int, document: Mapping[str, Any] | None = None
    ) -> list[Message]: ...


@dataclass(frozen=True)
class ExampleFormat:
    """How examples are worded (default: the prompts module's renderers, `prompts_format()`)."""

    designer_prompt: DesignerPromptFn
    """(skill, difficulty[, grounding document]) -> the Designer conversation."""
    designer_reply: Callable[[str, str], str]
    """(code, hint) -> the Designer's reply."""
    agent_first: Callable[[str, str, list[dict[str, Any]]], list[Message]]
    """(first observation, skill, tool schemas) -> the Agent conversation."""


def _default_designer_prompt(
    skill: str, difficulty: int, document: Mapping[str, Any] | None = None
) -> list[Message]:
    words = {1: "easy", 2: "medium", 3: "hard"}
    return [
        {
            "role": "user",
            "content": (
                f"Design a training environment for the skill {skill} "
                f"at difficulty {words.get(difficulty, difficulty)}. "
                "Write one Python class whose name ends in Env, with "
                "reset(seed=None) -> (observation, info) and "
                "step(action) -> (observation, reward, terminated, truncated, info), "
                "in a ```python block, "
                "then a line starting with HINT:."
            ),
        }
    ]


PLAIN_FORMAT = ExampleFormat(
    designer_prompt=_default_designer_prompt,
    designer_reply=lambda code, hint: f"```python\n{code.rstrip()}\n```\nHINT: {hint}",
    agent_first=lambda observation, skill, tools: [{"role": "user", "content": observation}],
)
"""A minimal wording that needs nothing else from the package."""


def prompts_format(budget_chars: int | None = None) -> ExampleFormat:
    """The wording the self-play loop uses (spade.prompts), with the embedded model's budget."""
    from spade import prompts

    budget = prompts.TINY_BUDGET_CHARS if budget_chars is None else budget_chars

    def designer_prompt(
        skill: str, difficulty: int, document: Mapping[str, Any] | None = None
    ) -> list[Message]:
        # what spade.designer.design renders (no exemplars: the warm start has no memory yet)
        return prompts.designer_messages(
            skill, prompts.difficulty_word(difficulty), document, budget_chars=budget
        )

    return ExampleFormat(
        designer_prompt=designer_prompt,
        designer_reply=prompts.designer_reply,
        agent_first=lambda observation, skill, tools: prompts.agent_messages(
            observation, prompts.kind_of_skill(skill), tools
        ),
    )


def with_default_difficulty(code: str, difficulty: int) -> str:
    """The program with its constructor's `difficulty=` default set to `difficulty`."""
    return re.sub(
        r"(def __init__\([^)]*\bdifficulty\s*=\s*)\d+", rf"\g<1>{difficulty}", code, count=1
    )


_REPLAY = r"""
import json, sys
from spade.sandbox import runtime
job = json.load(sys.stdin)


def play(code, runs):
    ns = runtime.build_namespace()
    exec(compile(code, "<seed>", "exec"), ns)
    cls = runtime.find_env_class(code, ns)
    out = []
    for difficulty, seed in runs:
        env = runtime.instantiate(cls, job["max_turns"], {"difficulty": difficulty})
        obs, _ = env.reset(seed=seed)
        tools = env.get_tools() if hasattr(env, "get_tools") else []
        replies = env.solution()
        replies = [replies] if isinstance(replies, str) else list(replies)
        turns, reward, done = [], 0.0, False
        for reply in replies:
            turns.append([obs, reply])
            obs, reward, terminated, truncated, _ = env.step(reply)
            if terminated or truncated:
                done = terminated
                break
        won = bool(done and reward > 0)
        out.append(
            {"difficulty": difficulty, "seed": seed, "turns": turns, "won": won, "tools": tools}
        )
    return out


results = []
for code, runs in job["programs"]:
    try:
        results.append(play(code, runs))
    except Exception:
        results.append([])
json.dump(results, sys.stdout)
"""


def replay_many(
    programs: Sequence[tuple[str, Sequence[tuple[int, int]]]],
    max_turns: int = 25,
    timeout_s: float = 120.0,
) -> list[list[dict[str, Any]]]:
    """Play trusted programs' `solution()` for each of their (difficulty, seed) runs, all in one
    child process. A program that fails gives []; if the child fails or hangs, every one does."""
    job = json.dumps(
        {
            "programs": [[code, [list(r) for r in runs]] for code, runs in programs],
            "max_turns": max_turns,
        }
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", _REPLAY],
            input=job,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=PACKAGE_PARENT,
        )
    except subprocess.TimeoutExpired:
        return [[] for _ in programs]
    if done.returncode != 0:
        return [[] for _ in programs]
    return list(json.loads(done.stdout))


def replay_solutions(
    code: str, runs: Sequence[tuple[int, int]], max_turns: int = 25, timeout_s: float = 120.0
) -> list[dict[str, Any]]:
    """Play a trusted seed's `solution()` for each (difficulty, seed) in one child process.

    Returns [] if the program fails or hangs: a broken seed must not stop the warm start.
    """
    return replay_many([(code, runs)], max_turns, timeout_s)[0]


def _agent_examples(
    fmt: ExampleFormat, skill: str, episodes: Sequence[Mapping[str, Any]], max_chars: int
) -> list[Example]:
    """One example per turn of each won episode, while the conversation fits in `max_chars`."""
    examples: list[Example] = []
    for episode in episodes:
        if not episode["won"]:
            continue
        messages: list[Message] = []
        for i, (observation, reply) in enumerate(episode["turns"]):
            messages += (
                fmt.agent_first(observation, skill, episode.get("tools", []))
                if i == 0
                else [{"role": "user", "content": observation}]
            )
            if sum(len(str(m["content"])) for m in messages) + len(reply) > max_chars:
                break
            examples.append(Example(tuple(messages), reply, "agent"))
            messages.append({"role": "assistant", "content": reply})
    return examples


def _documents(documents: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    if documents is not None:
        return list(documents)
    from spade import bundled

    return list(bundled.grounding_documents())


def seed_examples(
    fmt: ExampleFormat | None = None,
    episodes_per_level: int = 4,
    seed: int = 0,
    documents: Sequence[Mapping[str, Any]] | None = (),
    agent_max_chars: int = 6000,
) -> list[Example]:
    """Designer and Agent examples from the bundled seed environments (winning replays only).

    Each Designer prompt shows a grounding document drawn from `documents` (None: the bundled
    corpus; empty: none), as the Designer stage does.
    """
    from concurrent.futures import ThreadPoolExecutor

    from spade.bundled import seed_programs

    fmt = fmt or prompts_format()
    docs = _documents(documents)
    programs = seed_programs()
    rng = random.Random(seed)
    jobs = [
        [
            (level, rng.randrange(2**31))
            for level in (p.difficulty_levels() or (2,))
            for _ in range(episodes_per_level)
        ]
        for p in programs
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        replays = list(pool.map(replay_solutions, [p.code for p in programs], jobs))
    examples: list[Example] = []
    for program, episodes in zip(programs, replays):
        for level in program.difficulty_levels() or (2,):
            code = with_default_difficulty(program.code, level)
            document = rng.choice(docs) if docs else None
            examples.append(
                Example(
                    tuple(fmt.designer_prompt(program.skill, level, document)),
                    fmt.designer_reply(code, program.hint),
                    "designer",
                )
            )
        examples += _agent_examples(fmt, program.skill, episodes, agent_max_chars)
    return examples


LEVEL_WEIGHTS = (1, 2, 1)
"""How often template programs are shown at difficulty 1, 2, 3 (the loop asks for "medium")."""


def template_examples(
    fmt: ExampleFormat | None = None,
    count: int = 3000,
    seed: int = 0,
    documents: Sequence[Mapping[str, Any]] | None = None,
    agent_programs: int = 120,
    agent_max_chars: int = 6000,
) -> list[Example]:
    """Designer examples for `count` programs rendered from `spade.templates`, and Agent examples
    from the solutions of `agent_programs` of them (one episode each).

    Each program is shown under its own Designer prompt: a difficulty drawn with `LEVEL_WEIGHTS`
    (the program's constructor default set to it) and a grounding document drawn from
    `documents` (None: the bundled corpus), as the Designer stage draws one per attempt.
    """
    from spade import templates

    fmt = fmt or prompts_format()
    docs = _documents(documents)
    rng = random.Random(seed)
    programs = templates.render_many(count, seed=seed)
    examples: list[Example] = []
    for program in programs:
        level = rng.choices((1, 2, 3), weights=LEVEL_WEIGHTS)[0]
        document = rng.choice(docs) if docs else None
        examples.append(
            Example(
                tuple(fmt.designer_prompt(program.skill, level, document)),
                fmt.designer_reply(with_default_difficulty(program.code, level), program.hint),
                "designer",
            )
        )
    played = programs[:: max(1, len(programs) // max(agent_programs, 1))][:agent_programs]
    runs = [[(rng.choice((1, 2, 3)), rng.randrange(2**31))] for _ in played]
    replays = replay_many([(p.code, r) for p, r in zip(played, runs)])
    for program, episodes in zip(played, replays):
        examples += _agent_examples(fmt, program.skill, episodes, agent_max_chars)
    return examples


def warm_start_examples(seed: int = 0) -> list[Example]:
    """The default warm-start data: template programs and the seeds, both roles (see above)."""
    return template_examples(seed=seed) + seed_examples(seed=seed, documents=None)


def _source_fingerprint() -> str:
    """Hash of everything `warm_start_examples` reads: a cache key that changes with its data."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    files = [
        *sorted((root / "templates").glob("*.py")),
        *sorted((root / "seeds").rglob("*.py")),
        *sorted((root / "data").glob("*.jsonl")),
        root / "prompts.py",
        Path(__file__).resolve(),
    ]
    for path in files:
        h.update(str(path.relative_to(root)).encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


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


def bootstrap(
    model: str = "smollm2",
    *,
    examples: Sequence[Example] | Callable[[], Sequence[Example]] = warm_start_examples,
    steps: int = 2000,
    max_minutes: float = 5.0,
    learning_rate: float = 1e-4,
    batch_tokens: int = 1024,
    max_length: int = 6144,
    designer_share: float = 0.8,
    precision: str = "auto",
    seed: int = 0,
    output: str | Path | None = None,
    force: bool = False,
    progress: bool = True,
) -> Path:
    """Fine-tune `model` on the examples; return the folder of the result (cached unless `force`).

    Each step is one AdamW step (betas 0.9/0.95) over at least one sequence and about
    `batch_tokens` tokens; the default gives one program per step, since at this scale more,
    smaller steps learn faster per second than fewer large ones (measured: the same two minutes
    gave a Designer NLL of 3.3 at one sequence per step against 5.2 at four). Sequences are
    drawn so that `designer_share` of the tokens are Designer turns (writing code is the hard
    part); sequences longer than `max_length` tokens are dropped. Training stops after `steps`
    steps or `max_minutes`, whichever comes first; the learning rate follows a 5% warm-up and a
    cosine decay over whichever of the two is nearer, so a run cut by time still ends annealed.
    How far a time-cut run gets depends on the machine; `spade_bootstrap.json` in the result
    records the steps, tokens and final NLL.

    The cache key holds the examples: their hash, or for the default builder a hash of the files
    it reads (templates, seeds, corpus, prompts), so a cached model is found without building
    the data.
    """
    from spade.backends.base import PPOConfig, Sample
    from spade.backends.local import LocalBackend, LocalConfig
    from spade.backends.tiny import cache_dir

    built = time.monotonic()
    data: list[Example] | None = None
    if examples is warm_start_examples:
        data_hash = "warm_start_examples:" + _source_fingerprint()
    else:
        data = list(examples() if callable(examples) else examples)
        if not data:
            raise ValueError("no bootstrap examples")
        data_hash = hashlib.sha256(
            json.dumps([[list(e.messages), e.target, e.role] for e in data], default=str).encode()
        ).hexdigest()
    backend = LocalBackend(
        LocalConfig(
            model=model,
            seed=seed,
            precision=precision,
            ppo=PPOConfig(
                learning_rate=learning_rate,
                weight_decay=0.01,
                betas=(0.9, 0.95),
                micro_batch_tokens=min(batch_tokens, 8192),
            ),
        )
    )
    key = hashlib.sha256(
        json.dumps(
            [
                backend.tokenizer_fingerprint(),
                backend.precision,
                backend.model_path,
                data_hash,
                steps,
                max_minutes,
                learning_rate,
                batch_tokens,
                max_length,
                designer_share,
                seed,
            ]
        ).encode()
    ).hexdigest()[:16]
    target = (
        Path(output)
        if output
        else cache_dir() / "models" / f"{Path(backend.model_path).name}-boot-{key}"
    )
    meta_path = target / "spade_bootstrap.json"
    if meta_path.exists() and json.loads(meta_path.read_text()).get("finished") and not force:
        return target
    if data is None:
        data = list(warm_start_examples())

    sequences, dropped = _sequences(data, backend.tokenizer, backend.eot_ids, max_length)
    if not sequences:
        raise ValueError(f"every example is longer than max_length={max_length} tokens")
    build_seconds = time.monotonic() - built
    rng = random.Random(seed)
    pools = {role: [q for q in sequences if q.role == role] for role in ("designer", "agent")}
    queues: dict[str, list[_Sequence]] = {"designer": [], "agent": []}
    drawn = {"designer": 0, "agent": 0}

    def draw() -> _Sequence:
        # the role whose share of the tokens drawn so far is furthest below its target
        total = max(sum(drawn.values()), 1)
        role = "designer" if drawn["designer"] / total <= designer_share else "agent"
        if not pools[role]:
            role = "agent" if role == "designer" else "designer"
        if not queues[role]:
            queues[role] = list(pools[role])
            rng.shuffle(queues[role])
        seq = queues[role].pop()
        drawn[role] += seq.tokens
        return seq

    start, nll, step, progress_fraction = time.monotonic(), float("nan"), 0, 0.0
    seen = {"designer": 0, "agent": 0}
    tokens = 0
    bar = _Progress(steps, max_minutes, enabled=progress)
    while progress_fraction < 1.0:
        step += 1
        batch: list[_Sequence] = []
        used = 0
        while used < batch_tokens:
            seq = draw()
            if batch and used + seq.tokens > batch_tokens:
                queues[seq.role].append(seq)  # next step's
                drawn[seq.role] -= seq.tokens
                break
            batch.append(seq)
            used += seq.tokens
            seen[seq.role] += 1
        tokens += used
        elapsed = (time.monotonic() - start) / (max_minutes * 60)
        p = max((step - 1) / steps, elapsed)
        lr = learning_rate * (p / 0.05 if p < 0.05 else 0.5 * (1 + math.cos(math.pi * p)))
        for param_group in backend.optimizer.param_groups:
            param_group["lr"] = max(lr, learning_rate * 1e-3)
        loss = backend.sft_step(
            [Sample(q.ids, q.mask, (0.0,) * len(q.ids), 1.0, q.role) for q in batch]
        )["nll"]
        nll = loss if step == 1 else 0.9 * nll + 0.1 * loss  # smoothed for display
        progress_fraction = max(step / steps, (time.monotonic() - start) / (max_minutes * 60))
        bar.update(progress_fraction, step, nll)
    bar.close()
    backend.export(target)
    meta = {
        "base_model": backend.model_path,
        "steps": step,
        "finished": True,
        "stopped_by": "steps" if step == steps else "time",
        "sequences": {role: len(pool) for role, pool in pools.items()},
        "dropped_longer_than_max_length": dropped,
        "sequences_seen": seen,
        "tokens_seen": tokens,
        "data_seconds": round(build_seconds, 1),
        "seconds": round(time.monotonic() - start, 1),
        "final_nll": nll,
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    return target


class _Progress:
    """A rich progress bar over the training budget (steps or minutes, whichever runs out
    first) with ETA when rich is installed, else a line every 5%."""

    def __init__(self, steps: int, minutes: float, enabled: bool) -> None:
        self.enabled, self.bar, self.task, self.last = enabled, None, None, -1
        if not enabled:
            return
        try:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn(f"bootstrap (<= {steps} steps or {minutes:g} min)"),
                BarColumn(),
                TextColumn("step {task.fields[step]}"),
                TextColumn("nll {task.fields[nll]:.3f}"),
                TimeRemainingColumn(),
            )
            self.task = self.bar.add_task("bootstrap", total=1.0, step=0, nll=float("nan"))
            self.bar.start()
        except ImportError:
            pass

    def update(self, fraction: float, step: int, nll: float) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=min(fraction, 1.0), step=step, nll=nll)
        elif self.enabled and int(fraction * 20) > self.last:
            self.last = int(fraction * 20)
            line = f"bootstrap {fraction:.0%} step {step} nll {nll:.3f}"
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
