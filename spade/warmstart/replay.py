"""Replays of trusted programs' `solution()`, the warm start's Agent turns (spade.warmstart.data).

    [(episode,)] = replay_many([(code, [(2, 0)])])   # one program, one run: difficulty 2, seed 0
    episode["turns"]                                   # [[observation, reply], ...]; "won", "tools"

The programs (templates rendered by the package and the bundled seeds) are trusted, so each call
runs its programs in one plain child process of this interpreter, not in the sandbox: the child
plays each (difficulty, seed) run by sending `solution()`'s replies until the episode ends, and a
program that fails, or a child that fails or hangs, gives no episode instead of stopping the warm
start.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PACKAGE_PARENT = Path(__file__).resolve().parents[2]


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
    except (Exception, SystemExit):  # this program gives nothing, the others still play
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
