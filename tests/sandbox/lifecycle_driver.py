"""Start a Sandbox with live workers, print their pids, then end as told (run by
test_lifecycle.py): `exit` (leave the `async with` normally), `exception` (raise inside it),
`wait` (sleep until a signal: SIGINT, SIGTERM or SIGKILL from the test), `thread-sigint` (send
itself SIGINT through its idle executor thread, then sleep). It ends after the test
has written a line to its stdin (having checked that the processes are alive)."""

from __future__ import annotations

import asyncio
import faulthandler
import json
import signal
import sys
import threading

from spade.sandbox import Sandbox

GAME = """
class WaitEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        return "ok", 0.0, False, False, {}
"""


async def main(mode: str) -> None:
    async with Sandbox() as sandbox:
        sessions = [await sandbox.open(GAME) for _ in range(2)]
        sessions.append(await sandbox.open(GAME, strict=True))
        for s in sessions:
            await s.reset(0)
        await asyncio.sleep(0.2)  # let the warm pool fill
        assert sandbox._zygote is not None
        report = {
            "zygote": sandbox._zygote.pid,
            "workers": [s.pid for s in sessions + list(sandbox._idle)],
            "scratch_root": sandbox._scratch_root,
            "strict_scratch": sessions[-1]._scratch,
        }
        print(json.dumps(report), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "go"
        if mode == "exception":
            raise RuntimeError("the caller failed")
        if mode == "wait":
            print("waiting", flush=True)  # the test signals only once the stdin thread is done
            await asyncio.sleep(3600)
        if mode == "thread-sigint":
            # a Ctrl-C the kernel hands to the idle executor thread (the one that read stdin),
            # not to the main thread: it must still end the program, not wait for the sleep
            idle = next(t for t in threading.enumerate() if t is not threading.main_thread())
            assert idle.ident is not None
            signal.pthread_kill(idle.ident, signal.SIGINT)
            await asyncio.sleep(3600)


if __name__ == "__main__":
    # Ctrl-C as in a terminal. A shell starts a background job (`cmd &` without job control,
    # as in scripts and CI) with SIGINT ignored, Python then installs no handler, and the
    # test's SIGINT did nothing: in session 16 both SIGINT endings "hung" in every run of the
    # suite started in the background, never in the foreground.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # SIGUSR1 prints every thread's stack to stderr: the test asks for it when the driver does
    # not end in time, so a hang names where it waits
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    asyncio.run(main(sys.argv[1]))
