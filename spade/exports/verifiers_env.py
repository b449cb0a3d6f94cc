"""A bundle as a verifiers (0.4, `verifiers.v1`) environment package: a taskset and its env.

An exported package exports, through `__all__`, one `Taskset` subclass (`SpadeTaskset` bound to
its bundle) and `SpadeEnv`, so `vf.load_environment` / `vf eval <package>` find them as they find
verifiers' own tasksets. Each task is one environment at one seed (`seeds` per environment,
a taskset setting). `SpadeEnv.run` plays the task the way verifiers' TextArena and OpenEnv
tasksets do: the environment is the user, its observation opens the exchange (after spade's
Agent instructions), each reply is a move, and the episode's outcome-only return is recorded
as the reward `spade_return` (1 for a win). The programs run in one spade sandbox per process,
started at the first episode and stopped with the env (`stop`); never in verifiers' interpreter.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import verifiers.v1 as vf
from verifiers.v1.harnesses.null import NullHarnessConfig

from spade.envs.bundle import read_bundle
from spade.exports.host import EnvHost
from spade.prompts import agent_system

_HOSTS: dict[str, EnvHost] = {}


class SpadeData(vf.TaskData):
    bundle: str
    """The bundle directory."""
    env_id: str
    seed: int


class SpadeTask(vf.Task[SpadeData]):
    pass


class SpadeConfig(vf.TasksetConfig):
    seeds: int = 8
    """Episodes (seeds 0..seeds-1) per environment."""
    bundle: str | None = None
    """Another bundle directory to read instead of the package's own."""


class SpadeTaskset(vf.Taskset[SpadeTask, SpadeConfig]):
    """One task per environment and seed, seed-major (all environments at seed 0 first)."""

    BUNDLE_DIR: ClassVar[Path | None] = None

    def load(self) -> Iterator[SpadeTask]:
        directory = self.config.bundle or self.BUNDLE_DIR
        if directory is None:
            raise ValueError("no bundle: set the taskset's `bundle` directory")
        if self.config.seeds < 1:
            raise ValueError(f"seeds must be at least 1, got {self.config.seeds}")
        bundle = read_bundle(directory)
        root = str(bundle.root.resolve())
        for seed in range(self.config.seeds):
            for env in bundle.envs:
                yield SpadeTask(
                    SpadeData(
                        id=f"{env.env_id}#{seed}",
                        name=f"{env.skill or 'env'}/{env.env_id[:12]}#{seed}",
                        description=env.description or None,
                        prompt=None,
                        bundle=root,
                        env_id=env.env_id,
                        seed=seed,
                    ),
                    self.config.task,
                )


class SpadeEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(
        harness=NullHarnessConfig(id="null"), runtime=vf.SubprocessConfig()
    )
    """The Agent: verifiers' tool-less chat loop (`null`) in a local process by default; it only
    talks to the model (the environment is played here, in spade's sandbox)."""


class SpadeEnv(vf.Env[SpadeEnvConfig]):
    async def run(self, task: Any, agents: Any) -> None:
        data: SpadeData = task.data
        host = _HOSTS.get(data.bundle)
        if host is None:
            host = _HOSTS[data.bundle] = EnvHost(data.bundle)
        episode = await host.open(host.bundle.find(data.env_id))
        try:
            observation, _ = await episode.reset(data.seed)
            opening = f"{agent_system(episode.kind, episode.tools)}\n\n{observation}"
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(opening)
                while not segment.terminated:
                    result = await episode.step(segment.last_reply)
                    if episode.done:
                        break
                    segment = await interaction.turn(result.observation)
            trace = interaction.trace
            trace.record_reward("spade_return", episode.return_, 1.0)
            trace.info["spade_won"] = episode.won
            trace.info["spade_turns"] = episode.turns
        finally:
            await episode.close()

    async def stop(self) -> None:
        hosts = list(_HOSTS.values())
        _HOSTS.clear()
        for host in hosts:
            await host.aclose()
