"""What isolation costs: the spade sandbox against two other ways to run an environment program.

    .venv/bin/python benchmarks/sandbox.py [--episodes N] [--quick]
    .venv/bin/python benchmarks/sandbox.py --ray [--episodes N]   # the sandbox on Ray instead

Three executors run the same seed-like game (a number guessing game whose episodes last exactly 25
steps: the scripted policy never guesses right and the game truncates itself at turn 25), all
measured in this one run:

(a) sandbox     `spade.sandbox.Sandbox()` with its defaults: forked workers with every isolation
                layer the host offers (the active layers are printed under the table), 4 of them
                forked and isolated ahead of time; also measured without that warm pool;
(b) in-process  the paper reference's way, no isolation: `exec` the code in this interpreter with
                `runtime.build_namespace / find_env_class / instantiate`, call reset/step directly;
(c) subprocess  a fresh `python -I -S` per episode: spawn it, send the code, then one JSON line per
                request and per reply over its stdin/stdout pipes (no isolation beyond the process).

Rows: episode start (load + reset: worker start, code execution, construction, first
observation), step round trip, end-to-end steps/s (each episode's start and close included) with
one session at a time and with 16 at once, and validations per minute. Validation is
`spade.envs.validate.validate` for (a); (b) and (c) run a reduced check built from the same episodes
(static checks, the 9 blind probe policies x 8 seeds, solution replay at 4 seeds, termination,
determinism seeds replayed twice) without the sandbox's fresh-interpreter PYTHONHASHSEED variation,
the copy probes (`answer_leak`; `benchmarks/validator_cost.py` measures them) or any resource
limits. Ratios are plain value ratios of two columns. Prints one table; asserts nothing.

`--ray` measures the same episodes through `spade.sandbox.cluster.RaySandbox` instead (the `ray`
extra): the local sandbox, then, on a Ray cluster of two fake nodes on this machine
(`ray.cluster_utils.Cluster`), one sandbox host and two; episode start, step round trip and
end-to-end steps/s with 16 and 64 sessions at once, each against the local sandbox's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from spade.envs.checks import STATIC_CHECKS, ValidatorConfig
from spade.envs.episode import replay
from spade.envs.probes import blind_probes
from spade.envs.validate import validate
from spade.sandbox import Sandbox, SandboxConfig, runtime
from spade.types import Program

MAX_TURNS = 25
CONCURRENCY = 16

ENV_CODE = '''"""Find the hidden number with higher/lower feedback.

skill: Mathematical Reasoning
hint: Halve the remaining interval with every guess.
"""


class GuessEnv:
    def __init__(self, max_turns=25):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.secret = random.Random(seed).randint(1, 1000)
        self.turn = 0
        return "Guess the hidden integer in 1..1000. Reply \\\\boxed{n}.", {}

    def step(self, action):
        self.turn += 1
        m = re.fullmatch(r"\\\\boxed\\{\\s*(-?\\d+)\\s*\\}", action.strip())
        if m and int(m.group(1)) == self.secret:
            return "Correct!", 1.0, True, False, {}
        if not m:
            obs = "Invalid guess: reply \\\\boxed{n} with an integer n."
        else:
            obs = "Higher." if int(m.group(1)) < self.secret else "Lower."
        return obs, 0.0, False, self.turn >= self.max_turns, {"turn": self.turn}

    def solution(self):
        lo, hi, replies = 1, 1000, []
        while True:
            mid = (lo + hi) // 2
            replies.append("\\\\boxed{%d}" % mid)
            if mid == self.secret:
                return replies
            lo, hi = (mid + 1, hi) if mid < self.secret else (lo, mid - 1)
'''


def action(t: int) -> str:
    return f"\\boxed{{{1001 + t}}}"  # out of range: never wins, so every episode lasts 25 steps


# --- timing records ----------------------------------------------------------------------------


class Timings:
    def __init__(self) -> None:
        self.start_s: list[float] = []
        self.step_s: list[float] = []
        self.steps = 0


async def sequential(
    episode: Callable[[int, Timings], Awaitable[None]], seeds: range
) -> tuple[tuple[float, float, float], float]:
    """One session at a time: (median start ms, p90 start ms, median step ms), steps/s."""
    timings = Timings()
    started = time.perf_counter()
    for seed in seeds:
        await episode(seed, timings)
    rate = timings.steps / (time.perf_counter() - started)
    return summary(timings), rate


async def timed_episodes(
    episode: Callable[[int, Timings], Awaitable[None]], seeds: range, workers: int
) -> float:
    """Play one episode per seed with `workers` at a time; returns end-to-end steps/s."""
    timings = Timings()
    queue = list(seeds)

    async def worker() -> None:
        while queue:
            await episode(queue.pop(), timings)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return timings.steps / (time.perf_counter() - started)


# --- (a) the sandbox ---------------------------------------------------------------------------


def sandbox_episode(sandbox: Sandbox) -> Callable[[int, Timings], Awaitable[None]]:
    async def episode(seed: int, timings: Timings) -> None:
        t0 = time.perf_counter()
        session = await sandbox.open(ENV_CODE, max_turns=MAX_TURNS)
        await session.reset(seed)
        timings.start_s.append(time.perf_counter() - t0)
        for t in range(MAX_TURNS):
            t1 = time.perf_counter()
            result = await session.step(action(t))
            timings.step_s.append(time.perf_counter() - t1)
            timings.steps += 1
            if result.terminated or result.truncated:
                break
        await session.close()

    return episode


# --- (b) in-process, unisolated ----------------------------------------------------------------


def load_in_process(code: str) -> Any:
    namespace = runtime.build_namespace()
    exec(compile(code, "<env>", "exec"), namespace)
    return runtime.instantiate(runtime.find_env_class(code, namespace), MAX_TURNS)


async def inprocess_episode(seed: int, timings: Timings) -> None:
    t0 = time.perf_counter()
    env = load_in_process(ENV_CODE)
    env.reset(seed=seed)
    timings.start_s.append(time.perf_counter() - t0)
    for t in range(MAX_TURNS):
        t1 = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action(t))
        timings.step_s.append(time.perf_counter() - t1)
        timings.steps += 1
        if terminated or truncated:
            break


def inprocess_interleaved(seeds: range, width: int) -> float:
    """16 'concurrent' sessions in one thread: `width` live envs stepped round-robin."""
    steps, started = 0, time.perf_counter()
    pending = list(seeds)
    while pending:
        batch, pending = pending[:width], pending[width:]
        envs = []
        for seed in batch:
            env = load_in_process(ENV_CODE)
            env.reset(seed=seed)
            envs.append(env)
        for t in range(MAX_TURNS):
            for env in envs:
                env.step(action(t))
                steps += 1
    return steps / (time.perf_counter() - started)


# --- (c) a fresh `python -I -S` per episode ----------------------------------------------------

DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import runtime
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
req = json.loads(sys.stdin.readline())
ns = runtime.build_namespace()
exec(compile(req["code"], "<env>", "exec"), ns)
env = runtime.instantiate(runtime.find_env_class(req["code"], ns), req["max_turns"])
send(list(env.reset(seed=req["seed"])))
for line in sys.stdin:
    msg = json.loads(line)
    send(list(env.step(msg["action"])) if msg["op"] == "step" else env.solution())
"""
RUNTIME_DIR = str(Path(runtime.__file__).parent)


class Child:
    """One episode in one fresh interpreter, JSON lines over pipes."""

    async def start(self, code: str, seed: int) -> Any:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            "-c",
            DRIVER,
            RUNTIME_DIR,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return await self.request({"code": code, "seed": seed, "max_turns": MAX_TURNS})

    async def request(self, msg: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the episode process exited")
        return json.loads(line)

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()


async def subprocess_episode(seed: int, timings: Timings) -> None:
    child = Child()
    t0 = time.perf_counter()
    await child.start(ENV_CODE, seed)
    timings.start_s.append(time.perf_counter() - t0)
    for t in range(MAX_TURNS):
        t1 = time.perf_counter()
        _, _, terminated, truncated, _ = await child.request({"op": "step", "action": action(t)})
        timings.step_s.append(time.perf_counter() - t1)
        timings.steps += 1
        if terminated or truncated:
            break
    await child.close()


# --- the reduced check for (b) and (c) ---------------------------------------------------------

Policy = Callable[[int, str], "str | None"]
Player = Callable[[int, Policy], Awaitable[tuple[bool, list[Any], bool]]]


async def reduced_check(
    code: str,
    play: Player,
    solution: Callable[[int], Awaitable[Any]],
    cfg: ValidatorConfig,
    width: int,
) -> bool:
    """validate()'s episodes without the sandbox: static checks, probes, solution, termination,
    determinism seeds replayed twice by the same executor. True if admitted."""
    program = Program.from_code(code)
    if any(check(program, cfg) is not None for check in STATIC_CHECKS):
        return False
    gate = asyncio.Semaphore(width)

    async def limited(seed: int, policy: Callable[[int, str], str | None]) -> Any:
        async with gate:
            return await play(seed, policy)

    probes = blind_probes("game")
    runs = await asyncio.gather(
        *(limited(seed, make(seed)) for make in probes.values() for seed in range(cfg.probe_seeds))
    )
    ok = True
    for i in range(len(probes)):
        wins = [won for won, _, _ in runs[i * cfg.probe_seeds : (i + 1) * cfg.probe_seeds]]
        ok &= sum(wins) / len(wins) <= cfg.max_probe_win_rate
    for seed in range(cfg.solution_seeds):
        replies = await solution(seed)
        won, _, _ = await limited(seed, replay(replies if isinstance(replies, list) else [replies]))
        ok &= won
    ok &= any(ended for _, _, ended in runs)
    random_probe = probes["random"]
    for seed in cfg.determinism_seeds:
        a, b = await asyncio.gather(*(limited(seed, random_probe(seed)) for _ in range(2)))
        ok &= a[1] == b[1]
    return ok


def score(rewards: list[float], terminated: bool) -> bool:
    return terminated and bool(rewards) and rewards[-1] > 0


async def play_in_process(seed: int, policy: Callable[[int, str], str | None]) -> Any:
    env = load_in_process(ENV_CODE)
    obs, _ = env.reset(seed=seed)
    transcript, rewards, terminated, truncated = [obs], [], False, False
    for t in range(MAX_TURNS):
        reply = policy(t, obs)
        if reply is None:
            break
        obs, reward, terminated, truncated, _ = env.step(runtime.game_action(reply))
        transcript.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    return score(rewards, terminated), transcript, terminated or truncated


async def solution_in_process(seed: int) -> Any:
    env = load_in_process(ENV_CODE)
    env.reset(seed=seed)
    return env.solution()


async def play_in_subprocess(seed: int, policy: Callable[[int, str], str | None]) -> Any:
    child = Child()
    obs, _ = await child.start(ENV_CODE, seed)
    transcript, rewards, terminated, truncated = [obs], [], False, False
    for t in range(MAX_TURNS):
        reply = policy(t, obs)
        if reply is None:
            break
        obs, reward, terminated, truncated, _ = await child.request(
            {"op": "step", "action": runtime.game_action(reply)}
        )
        transcript.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    await child.close()
    return score(rewards, terminated), transcript, terminated or truncated


async def solution_in_subprocess(seed: int) -> Any:
    child = Child()
    await child.start(ENV_CODE, seed)
    replies = await child.request({"op": "solution"})
    await child.close()
    return replies


async def per_minute(n: int, one: Callable[[], Awaitable[bool]]) -> float:
    started = time.perf_counter()
    for _ in range(n):
        if not await one():
            print("warning: the benchmark environment was rejected", file=sys.stderr)
    return n / (time.perf_counter() - started) * 60


# --- the run -----------------------------------------------------------------------------------


def summary(timings: Timings) -> tuple[float, float, float]:
    start_ms = [s * 1000 for s in timings.start_s]
    p90 = statistics.quantiles(start_ms, n=10)[-1] if len(start_ms) > 1 else start_ms[0]
    return statistics.median(start_ms), p90, statistics.median(timings.step_s) * 1000


async def measure(episodes: int, validations: tuple[int, int, int]) -> dict[str, Any]:
    cfg = ValidatorConfig()
    seeds = range(episodes)
    out: dict[str, Any] = {}
    async with Sandbox() as sandbox:
        out["layers"] = dict(sandbox.layers)
        episode = sandbox_episode(sandbox)
        await timed_episodes(episode, range(1000, 1000 + CONCURRENCY), CONCURRENCY)  # warm-up
        out["a"], out["a_rate1"] = await sequential(episode, seeds)
        out["a_rate16"] = await timed_episodes(episode, seeds, CONCURRENCY)
        program = Program.from_code(ENV_CODE)
        out["a_val"] = await per_minute(
            validations[0], lambda: _admitted(validate(program, sandbox, cfg))
        )
    async with Sandbox(SandboxConfig(warm_workers=0)) as cold:  # every start pays for its fork
        episode = sandbox_episode(cold)
        await sequential(episode, range(1000, 1004))  # warm-up
        out["a_cold"], _ = await sequential(episode, seeds)

    await timed_episodes(inprocess_episode, range(1000, 1010), 1)  # warm-up
    out["b"], out["b_rate1"] = await sequential(inprocess_episode, seeds)
    out["b_rate16"] = inprocess_interleaved(seeds, CONCURRENCY)
    out["b_val"] = await per_minute(
        validations[1],
        lambda: reduced_check(ENV_CODE, play_in_process, solution_in_process, cfg, 1),
    )

    await timed_episodes(subprocess_episode, range(1000, 1004), 1)  # warm-up
    out["c"], out["c_rate1"] = await sequential(subprocess_episode, seeds)
    out["c_rate16"] = await timed_episodes(subprocess_episode, seeds, CONCURRENCY)
    out["c_val"] = await per_minute(
        validations[2],
        lambda: reduced_check(ENV_CODE, play_in_subprocess, solution_in_subprocess, cfg, 8),
    )
    return out


async def _admitted(verdict: Awaitable[Any]) -> bool:
    return (await verdict).admitted


def fmt(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def render(r: dict[str, Any], episodes: int, wall_s: float) -> None:
    table = Table(
        title=f"Running an environment program: {episodes} episodes of {MAX_TURNS} "
        "steps per measurement"
    )
    for name, justify in [
        ("", "left"),
        ("(a) sandbox", "right"),
        ("(b) in-process", "right"),
        ("(c) subprocess", "right"),
        ("(c)/(a)", "right"),
        ("(a)/(b)", "right"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    rows = [
        ("episode start, median (ms)", r["a"][0], r["b"][0], r["c"][0]),
        ("episode start, p90 (ms)", r["a"][1], r["b"][1], r["c"][1]),
        ("  same, no warm workers [3], median", r["a_cold"][0], r["b"][0], r["c"][0]),
        ("  same, no warm workers [3], p90", r["a_cold"][1], r["b"][1], r["c"][1]),
        ("step round trip, median (ms)", r["a"][2], r["b"][2], r["c"][2]),
        ("env steps/s, 1 session", r["a_rate1"], r["b_rate1"], r["c_rate1"]),
        (f"env steps/s, {CONCURRENCY} sessions [1]", r["a_rate16"], r["b_rate16"], r["c_rate16"]),
        ("validations/min [2]", r["a_val"], r["b_val"], r["c_val"]),
    ]
    for label, a, b, c in rows:
        table.add_row(label, fmt(a), fmt(b), fmt(c), fmt(c / a) + "x", fmt(a / b) + "x")
    console = Console()
    if not console.is_terminal:  # piped: do not wrap the table at 80 columns
        console = Console(width=120)
    console.print(table)
    active = [k for k, v in r["layers"].items() if v is None]
    missing = {k: v for k, v in r["layers"].items() if v is not None}
    console.print(f"(a) layers active ({len(active)}/{len(r['layers'])}): {', '.join(active)}")
    if missing:
        console.print("(a) layers missing: " + "; ".join(f"{k} ({v})" for k, v in missing.items()))
    console.print(
        f"[1] (a) asyncio.gather over {CONCURRENCY} sessions; (b) sequential: {CONCURRENCY} live "
        f"envs stepped round-robin in one thread; (c) {CONCURRENCY} concurrent processes. Steps/s "
        "rows are end to end: each episode's start and close are included.\n"
        "[2] (a) spade.envs.validate.validate (fresh interpreters for determinism, sequential); "
        "(b), (c) a reduced check on the same episodes (static checks, 7 probes x 8 seeds, "
        "solution at 4 seeds, termination, determinism seeds replayed twice by the same "
        "executor); (c) 8 processes at a time.\n"
        "[3] Sandbox(SandboxConfig(warm_workers=0)): the zygote forks and isolates a worker "
        "inside each start instead of ahead of time (the default keeps 4 waiting).\n"
        "Ratios divide two columns' values: for ms rows (c)/(a) > 1 means the sandbox is faster; "
        "for rate rows (c)/(a) < 1 does. (c) runs without site-packages (no numpy); the sandbox "
        f"zygote preloads it. {sys.executable}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f} at the end; measured in {wall_s:.0f} s.",
        highlight=False,
        markup=False,
    )


# --- the sandbox on Ray (--ray) -----------------------------------------------------------------


async def _ray_row(sandbox: Any, episodes: int) -> dict[str, float]:
    episode = sandbox_episode(sandbox)
    await timed_episodes(episode, range(1000, 1000 + CONCURRENCY), CONCURRENCY)  # warm-up
    (start, _, step), _ = await sequential(episode, range(episodes))
    rates = {w: await timed_episodes(episode, range(episodes), w) for w in (CONCURRENCY, 64)}
    return {"start": start, "step": step, "rate16": rates[CONCURRENCY], "rate64": rates[64]}


def measure_ray(episodes: int) -> dict[str, dict[str, float]]:
    import ray
    from ray.cluster_utils import Cluster

    from spade.sandbox.cluster import RaySandbox

    async def local() -> dict[str, float]:
        async with Sandbox() as sandbox:
            return await _ray_row(sandbox, episodes)

    async def on_ray(hosts: int) -> dict[str, float]:
        async with RaySandbox(hosts=hosts) as sandbox:
            assert len(sandbox.hosts) == hosts
            return await _ray_row(sandbox, episodes)

    out = {"local Sandbox": asyncio.run(local())}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    try:
        out["RaySandbox, 1 host"] = asyncio.run(on_ray(1))
        out["RaySandbox, 2 hosts"] = asyncio.run(on_ray(2))
    finally:
        ray.shutdown()
        cluster.shutdown()
    return out


def render_ray(r: dict[str, dict[str, float]], episodes: int, wall_s: float) -> None:
    table = Table(title=f"The sandbox on Ray: {episodes} episodes of {MAX_TURNS} steps per cell")
    table.add_column("", justify="left")
    for name in r:
        table.add_column(name, justify="right")
    for name in list(r)[1:]:
        table.add_column(f"{name.split(', ')[1]} / local", justify="right")
    base = r["local Sandbox"]
    for label, key in [
        ("episode start, median (ms)", "start"),
        ("step round trip, median (ms)", "step"),
        (f"env steps/s, {CONCURRENCY} sessions", "rate16"),
        ("env steps/s, 64 sessions", "rate64"),
    ]:
        cells = [fmt(v[key]) for v in r.values()]
        cells += [fmt(v[key] / base[key]) + "x" for v in list(r.values())[1:]]
        table.add_row(label, *cells)
    console = Console(width=140)
    console.print(table)
    console.print(
        "Both hosts and the local sandbox share this machine's "
        f"{os.cpu_count()} CPUs (two Ray nodes faked by ray.cluster_utils.Cluster), so a second "
        "host adds actor hops, not CPUs. Steps/s rows include each episode's start and close; "
        f"the driver steps every session (asyncio). Load average {os.getloadavg()[0]:.1f} at the "
        f"end; measured in {wall_s:.0f} s.",
        highlight=False,
        markup=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=200, help="episodes per measurement")
    parser.add_argument("--quick", action="store_true", help="40 episodes, fewer validations")
    parser.add_argument("--ray", action="store_true", help="RaySandbox rows (the ray extra)")
    args = parser.parse_args()
    episodes = 40 if args.quick else args.episodes
    if args.ray:
        started = time.perf_counter()
        ray_results = measure_ray(max(episodes, 2))
        render_ray(ray_results, max(episodes, 2), time.perf_counter() - started)
        return
    validations = (3, 3, 1) if args.quick else (10, 10, 3)
    started = time.perf_counter()
    results = asyncio.run(measure(max(episodes, 2), validations))
    render(results, max(episodes, 2), time.perf_counter() - started)


if __name__ == "__main__":
    main()
