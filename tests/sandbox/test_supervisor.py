"""What a fresh (strict) interpreter imports before isolation: the standard library and numpy
always, other preloaded packages only for a program that imports them; and that its start does
not count in the program's load deadline but in a start deadline of its own."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path

import pytest

from spade.sandbox import Sandbox, SandboxConfig, SandboxError, supervisor
from spade.sandbox.supervisor import strict_preload

REPORT = """{imports}
import sys


class ModulesEnv:
    def reset(self, seed=None):
        return ",".join(m for m in ("numpy", "json", "math_verify") if m in sys.modules), {{}}

    def step(self, action):
        return "done", 1.0, True, False, {{}}
"""


def test_strict_preload_keeps_what_the_program_imports() -> None:
    preload = ("json", "numpy", "math_verify", "gem", "gem.envs.game_env.sudoku")
    assert strict_preload(preload, "x = 1\n") == ("json", "numpy")
    code = "def f():\n    from gem.core import Env\n    import math_verify.parser\n"
    assert strict_preload(preload, code) == preload
    assert strict_preload(preload, "from . import x\nimport gemini\n") == ("json", "numpy")
    assert strict_preload(preload, "def broken(:\n") == preload  # cannot tell: everything


def test_a_fresh_interpreter_imports_math_verify_only_for_a_program_that_does() -> None:
    config = SandboxConfig(warm_workers=0)  # math_verify comes with the dev extra (verifiers)
    assert "math_verify" in config.preload

    async def modules(code: str, strict: bool) -> str:
        async with Sandbox(config) as sandbox:
            session = await sandbox.open(code, strict=strict)
            try:
                return (await session.reset(0))[0]
            finally:
                await session.close()

    plain, importing = REPORT.format(imports=""), REPORT.format(imports="import math_verify")
    assert asyncio.run(modules(plain, strict=True)) == "numpy,json"
    assert asyncio.run(modules(importing, strict=True)) == "numpy,json,math_verify"
    assert asyncio.run(modules(plain, strict=False)) == "numpy,json,math_verify"  # the zygote's


SLOW_START = """import time

time.sleep(1.5)  # a slow preloaded package: the worker's start, not the program's
"""

SLOW_LOAD = """import time

import spade_slowstart  # preloaded (in a fresh interpreter: because this program imports it)

_END = time.monotonic() + 1.5
while time.monotonic() < _END:  # the program's own load: 1.5 s of module-level work
    pass


class SlowLoadEnv:
    def reset(self, seed=None):
        return "ready", {}

    def step(self, action):
        return "done", 1.0, True, False, {}
"""


def test_the_load_deadline_counts_the_programs_load_not_the_workers_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh interpreter that takes 1.5 s to start (a slow preloaded package) and a program
    that takes 1.5 s to load, under a 2.5 s load deadline: each fits, together they do not.
    With the start inside the program's deadline, a busy machine failed programs that load in
    1 s under 3 s (a determinism replay of slow_import.py through Ray, session 17)."""
    package = tmp_path / "pkgs" / "spade_slowstart"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(SLOW_START)
    os.chmod(tmp_path, 0o755)
    extra = str(package.parent)
    original, original_read = supervisor._sys_path, supervisor._read_paths
    monkeypatch.setattr(supervisor, "_sys_path", lambda: [*original(), extra])
    monkeypatch.setattr(supervisor, "_read_paths", lambda: [*original_read(), extra])
    config = SandboxConfig(
        warm_workers=0, load_timeout_s=2.5, preload=(*SandboxConfig().preload, "spade_slowstart")
    )

    async def load_strict(config: SandboxConfig) -> tuple[str, float]:
        async with Sandbox(config) as sandbox:
            started = time.monotonic()
            session = await sandbox.open(SLOW_LOAD, strict=True)
            took = time.monotonic() - started
            obs, _ = await session.reset(0)
            await session.close()
            return obs, took

    obs, took = asyncio.run(load_strict(config))
    assert obs == "ready" and took >= 3.0  # both waits happened, neither ran past 2.5 s
    # the start has a deadline of its own (the sandbox's, not the program's): 1.5 s is over 1 s
    with pytest.raises(SandboxError) as caught:
        asyncio.run(load_strict(dataclasses.replace(config, start_timeout_s=1.0)))
    assert caught.value.kind == "timeout" and "1 s start deadline" in str(caught.value)
