"""A registered GEM environment as one of our programs: `spade pool import gem:<id>`.

The program makes the id with `gem.make` inside the sandbox (GEM is importable there) and keeps
our contract: the game's observation (with GEM's task suffix, the board of board games), reward 0
until the end, then 1 for a clean finish (terminated, not truncated, reward > 0; GEM's rewards
are shaped and its own turn cap ends with a partial reward) and 0 otherwise, as
`spade eval --suite gem` scores them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from spade.sandbox import SandboxConfig
from spade.types import Program

TEMPLATE = '''"""GEM environment {gem_id} (`spade pool import gem:{gem_id}`).

skill: {skill}
source: gem:{gem_id}
"""
import gem

GEM_ID = {gem_id!r}


class GemImportedEnv:
    def __init__(self, max_turns=None):
        self.game = gem.make(GEM_ID)
        self.max_turns = getattr(self.game, "max_turns", None) or max_turns or 25

    def _shown(self, observation, info):
        suffix = info.get("suffix", "") if isinstance(info, dict) else ""
        return str(observation) + ("\\n" + str(suffix) if suffix else "")

    def reset(self, seed=None):
        observation, info = self.game.reset(seed=seed)
        return self._shown(observation, info), {{}}

    def step(self, action):
        observation, reward, terminated, truncated, info = self.game.step(str(action))
        if terminated or truncated:
            won = bool(terminated) and not truncated and reward > 0
            return str(observation), (1.0 if won else 0.0), True, False, {{}}
        return self._shown(observation, info), 0.0, False, False, {{}}
'''


def gem_id_program(gem_id: str, skill: str) -> Program:
    """The program for `gem_id`; ValueError if GEM is missing or does not know the id."""
    try:
        from gem.envs.registration import ENV_REGISTRY
    except ImportError:
        raise ValueError("importing a GEM id needs gem-llm (docs/exports.md)") from None
    if gem_id not in ENV_REGISTRY:
        close = sorted(i for i in ENV_REGISTRY if gem_id.split("-")[0] in i)[:5]
        hint = f"; similar: {', '.join(close)}" if close else ""
        raise ValueError(f"GEM has no environment {gem_id!r}{hint}")
    code = TEMPLATE.format(gem_id=gem_id, skill=skill)
    return Program.from_code(code, source=f"gem:{gem_id}")


_IMPORTS_GEM = re.compile(r"^\s*(import gem\b|from gem[\s.])", re.MULTILINE)


def sandbox_config_for(codes: Iterable[str]) -> SandboxConfig:
    """The sandbox settings for these programs: GEM and its games imported by the zygote before
    it forks when any program imports GEM (a cold import in each worker takes seconds, several at
    once miss the 10 s load deadline, and numpy-backed games cannot be imported after
    isolation), else the defaults."""
    from spade.evals.suites import PRELOAD_GEM

    config = SandboxConfig()
    if any(_IMPORTS_GEM.search(code) for code in codes):
        preload = config.preload + tuple(m for m in PRELOAD_GEM if m not in config.preload)
        config = dataclasses.replace(config, preload=preload)
    return config
