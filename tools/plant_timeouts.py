"""Check mutmut's timed-out mutants by planting each one by hand (docs/testing.md).

    python tools/plant_timeouts.py spade/backends/ppo.py "spade.backends.ppo*" \\
        tests/backends/test_ppo.py tests/backends/test_local_update.py tests/backends/test_local.py
    python tools/plant_timeouts.py --status survived spade/selfplay/windows.py \\
        "spade.selfplay.windows*" tests/selfplay/test_windows.py   # re-check survivors after
        writing tests
    python tools/plant_timeouts.py --status any spade/selfplay/loop.py \\
        "spade.selfplay.loop.x__update__mutmut_3,spade.selfplay.loop.x__update__mutmut_7" \\
        tests/selfplay/test_loop.py -k upd

A mutmut "timeout" on a backend function usually means the slow tests covering it ran past
mutmut's limit before the fast test that kills it, or that nothing kills it. For every mutant
`mutmut results` lists as timed out under the name pattern (fnmatch patterns joined by commas;
`--status survived` for survivors, `--status any` for any state, unchecked included), this
applies it to the source file (`mutmut apply`), runs pytest with `-x` and the arguments given,
prints killed, SURVIVED or ERROR (pytest could not run the tests), and restores the file (also
on Ctrl-C). Not collected by pytest.
"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path


def timed_out(pattern: str, status: str = "timeout") -> list[str]:
    out = subprocess.run(
        ["mutmut", "results", "--all", "true"], capture_output=True, text=True, check=True
    ).stdout
    names = []
    for line in out.splitlines():
        name, _, state = line.strip().partition(": ")
        if status in (state, "any") and any(fnmatch.fnmatch(name, p) for p in pattern.split(",")):
            names.append(name)
    return names


def main() -> int:
    args, status = sys.argv[1:], "timeout"
    if args[:1] == ["--status"]:
        status, args = args[1], args[2:]
    if len(args) < 3:
        print(__doc__)
        return 2
    source, pattern, tests = Path(args[0]), args[1], args[2:]
    original = source.read_text()
    survived = 0
    try:
        for name in timed_out(pattern, status):
            applied = subprocess.run(["mutmut", "apply", name], capture_output=True, text=True)
            if applied.returncode != 0 or source.read_text() == original:
                print(f"{name}: not planted ({applied.stderr.strip() or 'no change'})")
                source.write_text(original)
                continue
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                capture_output=True,
                text=True,
            )
            source.write_text(original)
            # pytest's 1 is a failing test; 2-5 (interrupted, internal or usage error, nothing
            # collected) say nothing about the mutant
            verdict = {0: "SURVIVED", 1: "killed"}.get(
                run.returncode, f"ERROR (pytest {run.returncode})"
            )
            survived += verdict != "killed"
            print(f"{name}: {verdict}", flush=True)
    finally:
        source.write_text(original)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
