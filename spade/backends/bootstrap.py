"""Warm start (`spade bootstrap`): supervised fine-tuning of the embedded model on seed envs.

    from spade.backends.bootstrap import bootstrap
    path = bootstrap(model="tiny")                           # -> a cached model folder
    LocalBackend(LocalConfig(model=str(path)))

A randomly initialised few-million-parameter model writes no parseable code, and self-play cannot
start from zero reward. Issue 4 measured that a ~6M model trained ~5 minutes on programs rendered
from environment templates writes parseable programs (20/20) and working reset()/step() (14/20),
while the same model trained on general Python source wrote none. So the warm start trains on:

- Designer turns: a Designer prompt for a skill and difficulty -> the code and hint of a seed
  environment, with the default difficulty rewritten per variant;
- Agent turns: an observation (with the conversation so far) -> the next reply of the seed's
  `solution()`, recorded by replaying the solution in a child process.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade.backends.base import Message, Role

PACKAGE_PARENT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Example:
    """One supervised example: continue `messages` with `target` (the only trained tokens)."""

    messages: tuple[Message, ...]
    target: str
    role: Role


@dataclass(frozen=True)
class ExampleFormat:
    """How examples are worded. Replace with the prompts module's renderers when it exists."""

    designer_prompt: Callable[[str, int], list[Message]]
    """(skill, difficulty) -> the Designer conversation."""
    designer_reply: Callable[[str, str], str]
    """(code, hint) -> the Designer's reply."""
    agent_first: Callable[[str, str, list[dict[str, Any]]], list[Message]]
    """(first observation, skill, tool schemas) -> the Agent conversation."""


def _default_designer_prompt(skill: str, difficulty: int) -> list[Message]:
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
    return ExampleFormat(
        designer_prompt=lambda skill, level: prompts.designer_messages(
            skill, prompts.difficulty_word(level), budget_chars=budget
        ),
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
ns = runtime.build_namespace()
exec(compile(job["code"], "<seed>", "exec"), ns)
cls = runtime.find_env_class(job["code"], ns)
out = []
for difficulty, seed in job["runs"]:
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
    out.append({"difficulty": difficulty, "seed": seed, "turns": turns, "won": won, "tools": tools})
json.dump(out, sys.stdout)
"""


def replay_solutions(
    code: str, runs: Sequence[tuple[int, int]], max_turns: int = 25, timeout_s: float = 120.0
) -> list[dict[str, Any]]:
    """Play a trusted seed's `solution()` for each (difficulty, seed) in one child process.

    Returns [] if the program fails or hangs: a broken seed must not stop the warm start.
    """
    job = json.dumps({"code": code, "runs": [list(r) for r in runs], "max_turns": max_turns})
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
        return []
    if done.returncode != 0:
        return []
    return json.loads(done.stdout)


def seed_examples(
    fmt: ExampleFormat | None = None, episodes_per_level: int = 4, seed: int = 0
) -> list[Example]:
    """Designer and Agent examples from the bundled seed environments (winning replays only)."""
    from concurrent.futures import ThreadPoolExecutor

    from spade.bundled import seed_programs

    fmt = fmt or prompts_format()
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
            examples.append(
                Example(
                    tuple(fmt.designer_prompt(program.skill, level)),
                    fmt.designer_reply(code, program.hint),
                    "designer",
                )
            )
        for episode in episodes:
            if not episode["won"]:
                continue
            messages: list[Message] = []
            for i, (observation, reply) in enumerate(episode["turns"]):
                messages += (
                    fmt.agent_first(observation, program.skill, episode.get("tools", []))
                    if i == 0
                    else [{"role": "user", "content": observation}]
                )
                examples.append(Example(tuple(messages), reply, "agent"))
                messages.append({"role": "assistant", "content": reply})
    return examples


def bootstrap(
    model: str = "tiny",
    *,
    examples: Sequence[Example] | Callable[[], Sequence[Example]] = seed_examples,
    steps: int = 300,
    max_minutes: float = 5.0,
    learning_rate: float = 2e-3,
    batch_tokens: int = 4096,
    max_length: int = 3072,
    designer_share: float = 0.5,
    seed: int = 0,
    output: str | Path | None = None,
    force: bool = False,
    progress: bool = True,
) -> Path:
    """Fine-tune `model` on the examples; return the folder of the result (cached unless `force`).

    Each step is one AdamW step over about `batch_tokens` tokens, `designer_share` of them from
    Designer examples (there are far fewer of those, and writing code is the hard part); examples
    longer than `max_length` tokens are dropped. Training stops after `steps` steps or
    `max_minutes`, whichever comes first; the learning rate follows a 5% warm-up and a cosine
    decay over whichever of the two is nearer, so a run cut by time still ends annealed (it is
    written but not cached, since how far it got depends on the machine).
    """
    from spade.backends import chat
    from spade.backends.base import PPOConfig, Sample
    from spade.backends.local import LocalBackend, LocalConfig
    from spade.backends.tiny import cache_dir

    data = list(examples() if callable(examples) else examples)
    if not data:
        raise ValueError("no bootstrap examples")
    backend = LocalBackend(
        LocalConfig(
            model=model,
            seed=seed,
            ppo=PPOConfig(
                learning_rate=learning_rate,
                weight_decay=0.01,
                micro_batch_tokens=min(batch_tokens, 8192),
            ),
        )
    )
    data_hash = hashlib.sha256(
        json.dumps([[list(e.messages), e.target, e.role] for e in data], default=str).encode()
    ).hexdigest()
    key = hashlib.sha256(
        json.dumps(
            [
                backend.tokenizer_fingerprint(),
                backend.model_path,
                data_hash,
                steps,
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

    samples = []
    for e in data:
        prompt = chat.prompt_ids(backend.tokenizer, e.messages)
        reply = chat.encode(backend.tokenizer, e.target) + [min(backend.eot_ids)]
        if len(prompt) + len(reply) <= max_length:
            n = len(prompt) + len(reply)
            samples.append(
                Sample(
                    tuple(prompt + reply),
                    (0,) * len(prompt) + (1,) * len(reply),
                    (0.0,) * n,
                    1.0,
                    e.role,
                )
            )
    if not samples:
        raise ValueError(f"every example is longer than max_length={max_length} tokens")
    rng = random.Random(seed)
    pools = {role: [s for s in samples if s.role == role] for role in ("designer", "agent")}
    queues: dict[str, list[Sample]] = {"designer": [], "agent": []}

    def draw(role: str) -> Sample:
        if not pools[role]:
            role = "agent" if role == "designer" else "designer"
        if not queues[role]:
            queues[role] = list(pools[role])
            rng.shuffle(queues[role])
        return queues[role].pop()

    start, nll, step, progress_fraction = time.monotonic(), float("nan"), 0, 0.0
    bar = _Progress(steps, enabled=progress)
    while progress_fraction < 1.0:
        step += 1
        batch, used = [], 0
        while used < batch_tokens:
            sample = draw("designer" if rng.random() < designer_share else "agent")
            batch.append(sample)
            used += len(sample.token_ids)
        elapsed = (time.monotonic() - start) / (max_minutes * 60)
        p = max((step - 1) / steps, elapsed)
        lr = learning_rate * (p / 0.05 if p < 0.05 else 0.5 * (1 + math.cos(math.pi * p)))
        for group in backend.optimizer.param_groups:
            group["lr"] = max(lr, learning_rate * 1e-3)
        loss = backend.sft_step(batch)["nll"]
        nll = loss if step == 1 else 0.9 * nll + 0.1 * loss  # smoothed for display
        bar.update(step, nll)
        progress_fraction = max(step / steps, (time.monotonic() - start) / (max_minutes * 60))
    bar.close()
    backend.export(target)
    meta = {
        "base_model": backend.model_path,
        "steps": step,
        "finished": step == steps,
        "examples": {role: len(pool) for role, pool in pools.items()},
        "seconds": round(time.monotonic() - start, 1),
        "final_nll": nll,
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    return target


class _Progress:
    """A rich progress bar with ETA when rich is installed, else a line every 5%."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.enabled, self.bar, self.task = total, enabled, None, None
        if not enabled:
            return
        try:
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("bootstrap"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TextColumn("nll {task.fields[nll]:.3f}"),
                TimeRemainingColumn(),
            )
            self.task = self.bar.add_task("bootstrap", total=total, nll=float("nan"))
            self.bar.start()
        except ImportError:
            pass

    def update(self, step: int, nll: float) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=step, nll=nll)
        elif self.enabled and (step % max(1, self.total // 20) == 0 or step == self.total):
            print(f"bootstrap {step}/{self.total} nll {nll:.3f}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
