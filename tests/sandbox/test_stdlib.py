"""The whole standard library imports inside an environment, with every isolation layer active.

The modules that import in a plain interpreter on this host (`stdlib_modules.py`: every name of
`sys.stdlib_module_names` and their submodules, except the few it skips, each with its reason)
must import inside a sandbox worker too: C extensions whose shared libraries live in system
directories (`sqlite3`, `ssl`, `ctypes`), and lazily loaded submodules of packages the zygote had
already imported (`importlib.resources`, `json.tool`, the `encodings` codecs). The hostile suite
(test_hostile.py) checks that what else is on the host stays unreadable.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from spade.sandbox import Sandbox, SandboxConfig
from spade.sandbox.isolation import landlock_abi

HERE = Path(__file__).parent

IMPORT_ALL = """
import contextlib, importlib, io, json, warnings

NAMES = json.loads(%r)


class ImportAllEnv:
    def reset(self, seed=None):
        failed = {}
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for name in NAMES:
                try:
                    importlib.import_module(name)
                except BaseException as exc:
                    failed[name] = f"{type(exc).__name__}: {exc}"[:200]
        return json.dumps(failed), {}

    def step(self, action):
        return "", 0.0, True, False, {}
"""

USE_THEM = """
import json


class UseStdlibEnv:
    def reset(self, seed=None):
        from importlib import resources
        import json.tool
        import sqlite3
        import ctypes, ctypes.util
        import zoneinfo, datetime

        db = sqlite3.connect(":memory:")
        db.execute("CREATE TABLE t (x)")
        db.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
        total = db.execute("SELECT sum(x) FROM t").fetchone()[0]
        init = resources.files("json").joinpath("__init__.py").read_text()
        libm = ctypes.CDLL("libm.so.6")
        libm.fabs.restype = ctypes.c_double
        libm.fabs.argtypes = [ctypes.c_double]
        paris = datetime.datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))
        return json.dumps({
            "sqlite": total,
            "unicode_escape": b"tab\\\\there".decode("unicode_escape"),
            "resources": "JSONDecoder" in init,
            "json_tool": callable(json.tool.main),
            "fabs": libm.fabs(-2.5),
            "utc_offset": paris.utcoffset().total_seconds(),
        }), {}

    def step(self, action):
        return "", 0.0, True, False, {}
"""


def _config() -> SandboxConfig:
    # every layer this host can give: as root with Landlock, refuse to run with one missing
    full = sys.platform == "linux" and os.geteuid() == 0 and landlock_abi() >= 1
    return SandboxConfig(call_timeout_s=120, load_timeout_s=60, require_full_isolation=full)


def _run(code: str) -> tuple[dict[str, Any], dict[str, str | None]]:
    async def run() -> tuple[dict[str, Any], dict[str, str | None]]:
        async with Sandbox(_config()) as sandbox:
            session = await sandbox.open(code)
            obs, _ = await session.reset(0)
            layers = dict(session.layers)
            await session.close()
            return json.loads(obs), layers

    return asyncio.run(run())


@pytest.fixture(scope="module")
def host_modules() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-s", "-S", str(HERE / "stdlib_modules.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    names = json.loads(out.stdout)
    assert len(names) > 500  # every top-level module and their submodules
    return names


def test_every_stdlib_module_that_imports_on_the_host_imports_in_the_sandbox(
    host_modules: list[str],
) -> None:
    for lazy in ("importlib.resources", "json.tool", "encodings.unicode_escape", "sqlite3"):
        assert lazy in host_modules
    failed, layers = _run(IMPORT_ALL % json.dumps(host_modules))
    assert failed == {}, f"{len(failed)} modules fail in the sandbox: {failed}"
    if _config().require_full_isolation:
        assert {k: v for k, v in layers.items() if v is not None} == {}


def test_c_extensions_and_lazy_submodules_work() -> None:
    result, _ = _run(USE_THEM)
    assert result == {
        "sqlite": 6,
        "unicode_escape": "tab\there",
        "resources": True,
        "json_tool": True,
        "fabs": 2.5,
        "utc_offset": 7200.0,
    }
