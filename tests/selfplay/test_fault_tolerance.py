"""Fault tolerance: `spade train` killed anywhere resumes exactly; no Designer reply crashes design.

1. `spade train` (the real command, on the ~1M-parameter `tiny-test` model) is SIGKILLed at 20
   seeded random moments and resumed with `--resume` after each; every run ends with exactly the
   pool rows and trainer state (weights, optimizer, RNG) of an uninterrupted run.
2. 10,000 random and adversarial Designer replies go through design (parsing), validation and
   admission: the loop never raises, and every rejected reply has a recorded reason.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from spade.envs.pool import Pool
from spade.types import Program, Verdict
from tests.support.cli import COMMAND

COIN_ENV = '''"""Call a coin: the seed and the exact words of the call decide heads or tails.

skill: Coin Flips
hint: Any call wins about half of the time.
turns: single
"""
import hashlib


class CoinEnv:
    def __init__(self, max_turns=1):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.seed = seed or 0
        call = "reply \\\\boxed{heads} or \\\\boxed{tails}"
        return f"Seed {self.seed}. Call the coin: {call}.", {}

    def step(self, action):
        won = hashlib.sha256(f"{self.seed}|{action}".encode()).digest()[0] % 2 == 0
        return ("You win." if won else "You lose."), float(won), True, False, {}
'''

TRAIN_ARGS = [
    "--model",
    "tiny-test",
    "--iterations",
    "4",
    "--no-heldout-eval",
    "--design.skills",
    "Coin Flips",  # no bundled seeds: the pool holds the coin and the designs
    "--design.active-skills",
    "1",
    "--design.envs-per-regen",
    "2",
    "--design.max-tokens",
    "48",
    "--play.plays-per-env",
    "4",
    "--play.active-envs",
    "2",
    "--play.max-turns",
    "1",
    "--play.max-tokens",
    "8",
    "--validator.probe-seeds",
    "1",
    "--validator.solution-seeds",
    "1",
    "--sandbox.warm-workers",
    "1",
]
KILLS = 20


def _prepare(run_dir: Path) -> None:
    run_dir.mkdir(parents=True)
    program = Program.from_code(COIN_ENV, source="tests/coin")
    with Pool(run_dir / "pool.sqlite") as pool:
        pool.add_program(program, Verdict(program.env_id, True), 0, {})


def _start(run_dir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    if (run_dir / "config.json").exists():  # something to resume
        args = ["train", "--resume", str(run_dir)]
    else:  # killed before the run was set up: start it again
        args = ["train", "--run-dir", str(run_dir), *TRAIN_ARGS]
    return subprocess.Popen(
        [*COMMAND, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def _rows(run_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    with sqlite3.connect(run_dir / "pool.sqlite") as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in sorted(tables):
            rows = []
            for row in db.execute(f"SELECT * FROM {table}"):  # our own table names
                if table == "programs":  # the verdict's stats hold how long validation took
                    verdict = json.loads(row[10])
                    verdict.get("stats", {}).pop("seconds", None)
                    row = (*row[:10], json.dumps(verdict, sort_keys=True), *row[11:])
                rows.append(row)
            out[table] = sorted(rows, key=repr)
    return out


def _trainer_state(run_dir: Path) -> dict[str, Any]:
    import torch
    from safetensors.torch import load_file

    state = json.loads((run_dir / "state.json").read_text())
    ckpt = run_dir / state["checkpoint"] / "agent"
    weights = load_file(ckpt / "weights.safetensors")
    optimizer = torch.load(ckpt / "optimizer.pt", weights_only=False)
    rng = torch.load(ckpt / "rng.pt", weights_only=False)
    return {
        "state": state,
        "trainer": json.loads((ckpt / "state.json").read_text()),
        "weights": {k: v.tolist() for k, v in sorted(weights.items())},
        "optimizer": _plain(optimizer),
        "rng": _plain(rng),
    }


def _plain(value: Any) -> Any:
    """Tensors as lists, recursively: comparable with ==, every element."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _metrics(run_dir: Path) -> list[dict[str, Any]]:
    # measurements of the machine, not results: wall time and peak memory differ run to run
    timing = {"seconds", "model_seconds", "env_seconds", "overhead", "peak_rss_mib"}
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [
        {k: v for k, v in json.loads(ln).items() if k not in timing and not k.startswith("time/")}
        for ln in lines
    ]


def _difference(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> str:
    """Where two metrics logs first differ, as `path: got X, want Y` (pytest truncates)."""

    def walk(a: Any, b: Any, at: str) -> str | None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if found := walk(a.get(key, "<missing>"), b.get(key, "<missing>"), f"{at}.{key}"):
                    return found
            return None
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                if found := walk(x, y, f"{at}[{i}]"):
                    return found
            return None
        return None if a == b else f"{at}: got {a!r}, want {b!r}"

    return walk(got, want, "metrics") or "lengths differ"


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~3 min alone; far more on a loaded 2-core host
def test_train_killed_at_20_random_points_resumes_exactly(tmp_path: Path) -> None:
    env = dict(os.environ, SPADE_CACHE_DIR=str(tmp_path / "cache"))
    # build tiny-test first: building it in the reference run's process would move torch's
    # global RNG there and nowhere else (a difference of the cache, not of resuming)
    build = "from spade.backends.tiny import tiny_model_path; tiny_model_path('tiny-test')"
    subprocess.run([sys.executable, "-c", build], env=env, check=True, timeout=300)
    reference = tmp_path / "reference"
    _prepare(reference)
    started = time.monotonic()
    done = subprocess.run(
        [*COMMAND, "train", "--run-dir", str(reference), *TRAIN_ARGS],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    duration = time.monotonic() - started
    expected = _rows(reference), _trainer_state(reference), _metrics(reference)
    assert any(m["loss"] for m in expected[2]), "the reference run never trained: no signal"

    rng = random.Random(20)
    kills, runs = 0, 0
    while kills < KILLS:
        runs += 1
        run_dir = tmp_path / f"killed-{runs}"
        _prepare(run_dir)
        while True:
            proc = _start(run_dir, env)
            # anywhere in the process's life: start-up, designing, playing, training, checkpoint
            delay = rng.uniform(0.0, duration) if kills < KILLS else None
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
                continue
            stderr = proc.stderr.read().decode() if proc.stderr else ""
            assert proc.returncode == 0, stderr[-3000:]
            break
        assert _rows(run_dir) == expected[0], f"pool rows differ after run {runs}"
        assert _trainer_state(run_dir) == expected[1], f"trainer state differs after run {runs}"
        metrics = _metrics(run_dir)
        assert metrics == expected[2], _difference(metrics, expected[2])
    assert kills == KILLS


# --- 10,000 random and adversarial Designer replies ---------------------------------------------

VALID = [
    '''"""Say the number {n} back."""


class Echo{n}Env:
    def __init__(self, max_turns=2):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(100, 999) + {n}
        return f"Reply \\\\boxed{{N}} with N = {self.target}.", {}

    def step(self, action):
        won = action.strip() == "\\\\boxed{%d}" % self.target
        return ("yes" if won else "no"), float(won), True, False, {}

    def solution(self):
        return ["\\\\boxed{%d}" % self.target]
'''.replace("{n}", str(n))
    for n in range(3)
]

HOSTILE = [
    "import os\nos.system('touch /tmp/pwned')\nclass AEnv:\n    pass\n",
    "import os\nwhile True:\n    os.fork()\n",
    "while True:\n    pass\n",
    "import sys\nsys.exit(0)\n",
    "x = bytearray(1 << 34)\nclass AEnv:\n    pass\n",
    "import ctypes\nctypes.string_at(0)\n",
    "class Boom(BaseException):\n    pass\nraise Boom()\n",
    "print('x' * 10_000_000)\nclass AEnv:\n    pass\n",
    "def f():\n    return f()\nf()\n",
    "class AEnv:\n    def reset(self, seed=None):\n        return 1, 2, 3\n"
    "    def step(self, a):\n        return 'o', 0.0, True, False, {}\n",
    "class AEnv:\n    def reset(self, seed=None):\n        return 'o', {}\n"
    "    def step(self, a):\n        raise ValueError(a)\n",
    "class AEnv:\n    def reset(self, seed=None):\n        return 'o', {'x': object()}\n"
    "    def step(self, a):\n        return 'o', float('nan'), True, False, {}\n",
    "class AEnv:\n    def reset(self, seed=None):\n        return 'o' * 10**7, {}\n"
    "    def step(self, a):\n        return 'o', 0.0, True, False, {}\n",
    "import socket\nsocket.create_connection(('1.1.1.1', 80))\nclass AEnv:\n    pass\n",
    "import pickle, os\nclass AEnv:\n    def reset(self, seed=None):\n"
    "        return pickle.dumps(os), {}\n    def step(self, a):\n"
    "        return 'o', 0.0, True, False, {}\n",
]

WORDS = "class Env def return reset step import python ``` HINT: boxed { } ( ) : self".split()


def _block(code: str, hint: str | None = "Count carefully.") -> str:
    return f"```python\n{code}\n```" + ("" if hint is None else f"\nHINT: {hint}")


def fuzz_replies(n: int, seed: int = 0) -> tuple[list[str], int]:
    """`n` seeded replies; returns them and how many can get past the static checks."""
    import ast
    import warnings

    rng = random.Random(seed)
    dynamic: list[str] = [_block(v) for v in VALID] + [_block(h) for h in HOSTILE]
    dynamic += [_block(VALID[0])] * 3  # exact copies: duplicates
    mutated_ok = 0
    out: list[str] = []

    def mutate(code: str) -> str:
        nonlocal mutated_ok
        while True:
            chars = list(code)
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(chars))
                op = rng.random()
                if op < 0.4:
                    del chars[i]
                elif op < 0.8:
                    chars.insert(i, rng.choice("()[]{}:'\"\\\n\t #=.,"))
                else:
                    chars[i] = chr(rng.randrange(0x20, 0x2FFF))
            text = "".join(chars)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # invalid escape sequences in mutants
                    ast.parse(text)
            except (SyntaxError, ValueError):
                return text
            if mutated_ok < 10:  # a few mutants that still parse go to the sandbox
                mutated_ok += 1
                return text

    makers = [
        lambda: rng.choice(["", " ", "\n\n\t", "```", "```python", "```python\n```"]),
        lambda: " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 300))),
        lambda: bytes(rng.randrange(256) for _ in range(rng.randint(1, 3000))).decode("latin-1"),
        lambda: (
            "".join(chr(rng.randrange(0x0, 0x10FFFF)) for _ in range(rng.randint(1, 500)))
            .encode("utf-8", "surrogatepass")
            .decode("utf-8", "replace")
        ),
        lambda: "```python\n" + VALID[rng.randrange(3)][: rng.randrange(400)],  # cut off
        lambda: "```\n```python\n```py\n" + "```" * rng.randint(1, 50),
        lambda: "~~~python\nclass AEnv: pass\n~~~\nHINT: tildes",
        lambda: _block("x = " + "(" * rng.randint(100, 20_000) + "1"),
        lambda: _block("x = " + "[" * rng.randint(10, 5_000) + "]" * rng.randint(10, 5_000)),
        lambda: _block("".join(" " * i + "if True:\n" for i in range(rng.randint(50, 120)))),
        lambda: _block("\n".join(f"class C{i}Env:\n    pass" for i in range(rng.randint(2, 2000)))),
        lambda: _block("class Helper:\n    pass\nx = 1\n"),  # no environment class
        lambda: _block(mutate(VALID[rng.randrange(3)])),
        lambda: _block(VALID[rng.randrange(3)], hint=None),  # no hint
        lambda: _block(VALID[rng.randrange(3)], hint="```python\nprint(1)\n```"),
        lambda: _block("#" * rng.randint(100_000, 300_000)),  # too long
        lambda: "x" * rng.randint(500_000, 1_000_000),  # a huge reply
        lambda: _block(VALID[0] + "\n" + "y = 1\n" * rng.randint(1, 3), hint="near copy"),
    ]
    weights = [3, 15, 10, 10, 8, 5, 2, 5, 3, 3, 2, 5, 20, 4, 3, 0.1, 0.05, 0.02]
    while len(out) < n - len(dynamic):
        out.append(rng.choices(makers, weights)[0]())
    for reply in dynamic:
        out.insert(rng.randrange(len(out) + 1), reply)
    return out, len(dynamic) + mutated_ok


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~35-60 s alone
def test_10000_random_designer_replies_never_crash_design(tmp_path: Path) -> None:
    from spade.backends.base import SamplingParams
    from spade.envs.checks import ValidatorConfig
    from spade.prompts import PromptSettings
    from spade.rewards import INVALID_DESIGN_REWARD
    from spade.sandbox import Sandbox, SandboxConfig
    from spade.selfplay.admission import DesignRequest, design_and_admit
    from tests.support.scripted import ScriptedPolicy  # tests/ is on sys.path

    replies, reachable = fuzz_replies(10_000)
    assert len(replies) == 10_000 and reachable < 60
    queue = iter(replies)
    policy = ScriptedPolicy(lambda messages: next(queue))
    sandbox_cfg = SandboxConfig(
        call_timeout_s=1.0, load_timeout_s=3.0, episode_timeout_s=6.0, warm_workers=2
    )
    # the Echo programs say their answer: the copy probes (answer_leak) stay off, as in loopkit
    validator = ValidatorConfig(
        probe_seeds=1, solution_seeds=1, determinism_seeds=(3,), copy_seeds=(0, 0)
    )
    rng = random.Random(0)
    batch = 500

    import asyncio

    loop = asyncio.new_event_loop()
    sandbox = Sandbox(sandbox_cfg)
    loop.run_until_complete(sandbox.start())
    try:
        with Pool(tmp_path / "pool.sqlite") as pool:
            for it in range(1, len(replies) // batch + 1):
                # the loop's own admission path (one attempt per slot, as the small recipe)
                request = DesignRequest(
                    iteration=it,
                    regen=it,
                    skills=("Fuzzing",) * batch,
                    rng=rng,
                    params=SamplingParams(max_tokens=16),
                    validator=validator,
                    failed_reward=INVALID_DESIGN_REWARD,
                    prompt_settings=PromptSettings(budget_chars=400),
                )
                design_and_admit(policy, sandbox, pool, loop.run_until_complete, request)
            with sqlite3.connect(tmp_path / "pool.sqlite") as db:
                rows = db.execute("SELECT admitted, failures FROM design_attempts").fetchall()
            admitted = {p.env_id for p in pool.admitted()}
    finally:
        loop.run_until_complete(sandbox.aclose())
        loop.close()
    assert len(rows) == 10_000  # every reply is a recorded attempt
    for ok, failures in rows:
        reasons = json.loads(failures)
        if not ok:
            assert reasons, "a rejected attempt without a reason"
            for r in reasons:
                assert (r["reason"] if isinstance(r, dict) else r).strip(), reasons
    hostile_ids = {Program.from_code(h).env_id for h in HOSTILE}
    assert admitted and not hostile_ids & admitted
    # what got in is a valid design (or a near copy or a still-valid mutant of one), once each
    with Pool(tmp_path / "pool.sqlite") as pool:
        codes = [p.code for p in pool.admitted()]
    assert all("class Echo" in code for code in codes), codes
    assert len(codes) == len(admitted)
