"""`spade pool import` of GEM environments: a file with a `gem.Env` subclass, and a registered
id (`gem:<id>`), validated in a sandbox that preloads GEM."""

from __future__ import annotations

from pathlib import Path

import pytest
import tyro

from spade.cli.pool_commands import pool as pool_command
from spade.envs.pool import Pool
from spade.exports.gem_import import gem_id_program, sandbox_config_for

pytest.importorskip("gem")

PARITY = '''"""A GEM environment: say whether a number is even or odd."""
import random

from gem.core import Env
from gem.utils.constants import TERMINAL_STATE


class ParityEnv(Env):
    def __init__(self, max_turns=1):
        super().__init__()
        self.max_turns = max_turns

    def reset(self, seed=None):
        super().reset(seed)
        self.n = random.Random(seed).randint(1, 999)
        return f"Is {self.n} even or odd? Answer with \\\\boxed{{even}} or \\\\boxed{{odd}}.", {}

    def step(self, action):
        want = "even" if self.n % 2 == 0 else "odd"
        won = action.strip() == "\\\\boxed{" + want + "}"
        return TERMINAL_STATE, (1.0 if won else 0.0), True, False, {}
'''


def pool_cli(*args: object) -> int:
    return int(tyro.cli(pool_command, args=[str(a) for a in args]))


def skills(run: Path) -> list[str]:
    with Pool(run / "pool.sqlite") as pool:
        return [r["skill"] for r in pool.export_rows()]


def test_a_gem_file_needs_a_skill_then_is_admitted(tmp_path: Path) -> None:
    path = tmp_path / "parity.py"
    path.write_text(PARITY)
    run = tmp_path / "run"
    assert pool_cli("import", path, "--into", run, "--probe-seeds", 4) == 1  # no skill
    assert pool_cli("import", path, "--into", run, "--probe-seeds", 4, "--skill", "Logic") == 0
    assert "Logic" in skills(run)


def test_a_registered_gem_id_is_imported(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ("--into", run, "--probe-seeds", 4, "--skill", "Logical Deduction")
    assert pool_cli("import", "gem:game:GuessTheNumber-v0-easy", *args) == 0
    assert skills(run) == ["Logical Deduction"]
    assert pool_cli("import", "gem:game:NoSuchGame-v0", *args) == 2
    with pytest.raises(ValueError, match="similar: game:GuessTheNumber"):
        gem_id_program("game:GuessTheNumber-v9", "x")


def test_only_programs_that_import_gem_get_it_preloaded() -> None:
    plain = sandbox_config_for(["import random\n"])
    with_gem = sandbox_config_for(["import random\n", PARITY])
    assert "gem" not in plain.preload and "gem" in with_gem.preload
    assert set(plain.preload) < set(with_gem.preload)
