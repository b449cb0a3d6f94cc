"""What a fresh (strict) interpreter imports before isolation: the standard library and numpy
always, other preloaded packages only for a program that imports them."""

from __future__ import annotations

import asyncio

from spade.sandbox import Sandbox, SandboxConfig
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
