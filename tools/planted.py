"""Plant each bug of issue 16's table in the working tree, run the tests that should catch it,
restore the file. Prints one line per bug; exits 1 if any bug survived.

    python tools/planted.py            # from the repository root; 2-7 minutes on 2 cores

Not collected by pytest (no test_ prefix). The working tree must be clean for the planted files:
each is restored byte for byte afterwards, even on Ctrl-C.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOOP = [
    "tests/selfplay/test_loop_values.py",
    "tests/selfplay/test_loop_design.py",
    "tests/selfplay/test_loop_time.py",
    "tests/selfplay/test_loop.py",
    "-m",
    "not slow",
]
LOCAL = ["tests/backends/test_local_update.py"]

PLANTS = [
    (
        "hinted and plain arms swapped in the regret",
        "spade/selfplay/windows.py",
        "hinted, plain = pool.paired_returns(",
        "plain, hinted = pool.paired_returns(",
        LOOP,
    ),
    (
        "Designer advantage scale forced to 1",
        "spade/selfplay/windows.py",
        "scale = designer_scale(\n"
        "        n_agent, len(closing), regen_interval, cap=scale_cap, "
        "floor=min(scale_floor, scale_cap)\n    )",
        "scale = 1.0",
        LOOP,
    ),
    (
        "all designs in one centring group",
        "spade/selfplay/windows.py",
        '[(p["skill"], p["regen"]) for p in closing]',
        "[0 for p in closing]",
        LOOP,
    ),
    (
        "solution-leak hint gate given no solution",
        "spade/selfplay/windows.py",
        'hint_gate(item["hint"], item["solution"],',
        'hint_gate(item["hint"], [],',
        LOOP,
    ),
    (
        "hinted plays trained as Agent samples",
        "spade/selfplay/loop.py",
        "if not r.request.hinted and not r.error and r.completions:",
        "if not r.error and r.completions:",
        LOOP,
    ),
    (
        "Designer reward function ignored (constant 0.5)",
        "spade/selfplay/windows.py",
        "reward = reward_fn(stats)",
        "reward = 0.5",
        LOOP,
    ),
    (
        "window closed at once",
        "spade/selfplay/windows.py",
        'p["iteration"] + regen_interval - 1 <= it',
        'p["iteration"] <= it',
        LOOP,
    ),
    (
        "LocalBackend.update passes the lower clip bound for both sides",
        "spade/backends/training.py",
        "ppo.clip_low,\n            ppo.clip_high,",
        "ppo.clip_low,\n            ppo.clip_low,",
        LOCAL,
    ),
    (
        "loss normalised per sequence, not per token",
        "spade/backends/training.py",
        'batch["mask"],\n            float(n_tok),',
        'batch["mask"] / batch["mask"].sum(1, keepdim=True).clamp(min=1),\n'
        "            float(len(micro)),",
        LOCAL,
    ),
    (
        "no gradient clipping",
        "spade/backends/training.py",
        'max_norm = ppo.max_grad_norm if ppo.max_grad_norm > 0 else float("inf")',
        'max_norm = float("inf")',
        LOCAL,
    ),
    (
        "weight decay on every parameter",
        "spade/backends/training.py",
        "(decay if p.dim() >= 2 else no_decay).append(p)",
        "decay.append(p)",
        LOCAL,
    ),
    (
        "verdicts keyed by env_id (a duplicate overwrites the admitted one)",
        "spade/selfplay/admission.py",
        "by_index.update({i: v for (i, _), v in zip(indexed, verdicts)})\n"
        "    return [by_index.get(i) for i in range(len(attempts))]",
        "by_id = {p.env_id: v for (_, p), v in zip(indexed, verdicts)}\n"
        "    return [by_index.get(i) or (by_id.get(a.program.env_id) if a.program else None)\n"
        "            for i, a in enumerate(attempts)]",
        ["tests/selfplay/test_admission.py", "tests/selfplay/test_loop_values.py"],
    ),
]


def main() -> int:
    # a kill (SIGTERM) still restores the planted file: `finally` runs on SystemExit
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    survived = 0
    for name, path, old, new, tests in PLANTS:
        file = ROOT / path
        original = file.read_bytes()
        text = original.decode()
        if text.count(old) != 1:
            print(f"STALE  {name}: the planted line is not (exactly once) in {path}")
            survived += 1
            continue
        try:
            file.write_text(text.replace(old, new))
            rc = subprocess.run(
                # one process: under xdist `-x` ends the session as interrupted (rc 2), not failed
                [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider"]
                + tests,
                cwd=ROOT,
                capture_output=True,
            ).returncode
        finally:
            file.write_bytes(original)
        caught = rc == 1
        survived += not caught
        print(f"{'caught' if caught else 'MISSED'} {name} ({path}; pytest rc {rc})")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
