"""A bundle as GEM environments: a `gem.Env` per session, ids in GEM's registry.

`register_bundle(directory)` registers `spade:<name>-v0` (the whole pool: `reset(seed)` draws
an environment with the seed, or `gem.make(id, task=...)` fixes one) and
`spade:<name>-<index>-v0` for each environment. GEM's API is synchronous, so the sandbox runs on
an event loop in a daemon thread, one per bundle per process (`spade.exports.host.SyncHost`),
closed at exit; the programs never run in the caller's interpreter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gem
from gem.core import Env
from gem.envs.registration import ENV_REGISTRY

from spade.envs.bundle import read_bundle
from spade.exports.host import HostedEpisode, SyncHost, shared_host


class SpadeGemEnv(Env):
    """One environment instance; `reset` opens (or reuses) a sandbox session."""

    def __init__(self, bundle_dir: str, task: str | int | None = None) -> None:
        super().__init__()
        self.bundle_dir = bundle_dir
        self.task = task
        self._host: SyncHost = shared_host(bundle_dir)
        self._episode: HostedEpisode | None = None

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed)  # seeds GEM's global RNGs, as GEM's own environments do
        env = self._host.host.pick(self.task, seed)
        if self._episode is not None and self._episode.env != env:
            self.close()
        if self._episode is None:
            self._episode = self._host.call(self._host.host.open(env))
        return self._host.call(self._episode.reset(seed))

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._episode is None:
            raise RuntimeError("step before reset: call reset first")
        r = self._host.call(self._episode.step(str(action)))
        return r.observation, r.reward, r.terminated, r.truncated, r.info

    def solution(self) -> list[str] | None:
        """The current episode's winning replies, when the environment can tell them."""
        if self._episode is None:
            raise RuntimeError("solution before reset: call reset first")
        return self._host.call(self._episode.solution())

    def spawn(self, same_state: bool = False, **kwargs: Any) -> SpadeGemEnv:
        if same_state:
            raise NotImplementedError("a sandboxed episode cannot be copied mid-game")
        return SpadeGemEnv(kwargs.get("bundle_dir", self.bundle_dir), kwargs.get("task", self.task))

    def close(self) -> None:
        episode, self._episode = self._episode, None
        if episode is not None:
            self._host.call(episode.close())


def register_bundle(directory: str | Path) -> list[str]:
    """Register the bundle's ids with GEM (again: no-op) and return them, the pool's first."""
    bundle = read_bundle(directory)
    root = str(Path(directory).resolve())
    ids: dict[str, str | None] = {f"spade:{bundle.name}-v0": None}
    ids.update({f"spade:{bundle.name}-{i:03d}-v0": e.env_id for i, e in enumerate(bundle.envs)})
    for env_id, task in ids.items():
        if env_id not in ENV_REGISTRY:
            gem.register(env_id, entry_point=SpadeGemEnv, bundle_dir=root, task=task)
    return list(ids)
