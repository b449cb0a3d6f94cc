"""A bundle as an OpenEnv environment: models, the server-side `Environment`, the app and a client.

The server (`make_app`) is OpenEnv's own FastAPI app (`create_app`); each WebSocket session gets
a `SpadeEnvironment`, whose `reset_async`/`step_async` run on the server's event loop and play
the bundle's programs in one spade sandbox per server process. The sandbox starts with the first
reset and stops when the app shuts down; the programs never run in the server's interpreter.

`reset(seed=, task=)`: `task` picks an environment of the bundle (its index or an env_id
prefix); without it the seed draws one, so a trainer sampling seeds samples the pool.
Actions are the agent's reply as written (`SpadeAction(message=...)`); a game reply is reduced
to its first `\\boxed{}` as in spade's own rollouts. Rewards are the environment's; `won` is set
when the episode ends.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any, ClassVar

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from spade.exports.host import EnvHost, HostedEpisode


class SpadeAction(Action):
    """The agent's reply, as the model wrote it."""

    message: str = Field(
        ..., description="The reply: a game move in \\boxed{...}, or a tool call / <answer>."
    )


class SpadeObservation(Observation):
    """What the environment shows the agent, with where the episode stands."""

    text: str = Field(default="", description="The environment's observation text")
    env_id: str = Field(default="", description="sha256 of the environment program")
    skill: str = Field(default="", description="The skill the environment exercises")
    turn: int = Field(default=0, description="Steps taken in this episode")
    truncated: bool = Field(default=False, description="Ended by the turn cap or an error")
    won: bool | None = Field(default=None, description="Set when the episode ends")
    error: str | None = Field(default=None, description="Why the environment failed, if it did")


class SpadeState(State):
    env_id: str | None = Field(default=None, description="The environment being played")
    seed: int | None = Field(default=None, description="The episode's seed")
    max_turns: int = Field(default=0, description="The episode's turn cap")


class SpadeEnvironment(Environment[SpadeAction, SpadeObservation, SpadeState]):
    """One session's environment; `make_app` binds the class to a bundle's host."""

    SUPPORTS_CONCURRENT_SESSIONS: ClassVar[bool] = True
    host: ClassVar[EnvHost]
    _closing: ClassVar[set[asyncio.Task[None]]] = set()

    def __init__(self) -> None:
        super().__init__()
        self._episode: HostedEpisode | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state = SpadeState(episode_id=None, step_count=0)

    def get_metadata(self) -> EnvironmentMetadata:
        bundle = self.host.bundle
        skills = sorted({e.skill for e in bundle.envs if e.skill})
        return EnvironmentMetadata(
            name=bundle.name,
            description=f"{len(bundle.envs)} spade environments ({', '.join(skills) or 'mixed'})",
            version="1",
            author="spade",
        )

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kw: Any) -> Any:
        raise NotImplementedError("SpadeEnvironment is served asynchronously: use reset_async")

    def step(self, action: SpadeAction, timeout_s: float | None = None, **kw: Any) -> Any:
        raise NotImplementedError("SpadeEnvironment is served asynchronously: use step_async")

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task: str | None = None,
        **kwargs: Any,
    ) -> SpadeObservation:
        self._loop = asyncio.get_running_loop()
        env = self.host.pick(task, seed)
        if self._episode is not None and self._episode.env != env:
            await self._episode.close()
            self._episode = None
        if self._episode is None:
            self._episode = await self.host.open(env)
        text, info = await self._episode.reset(seed)
        self._state = SpadeState(
            episode_id=episode_id or str(uuid.uuid4()),
            step_count=0,
            env_id=env.env_id,
            seed=seed,
            max_turns=info["max_turns"],
        )
        return SpadeObservation(text=text, env_id=env.env_id, skill=env.skill, done=False)

    async def step_async(
        self, action: SpadeAction, timeout_s: float | None = None, **kwargs: Any
    ) -> SpadeObservation:
        if self._episode is None:
            raise RuntimeError("step before reset: call reset first")
        result = await self._episode.step(action.message)
        self._state.step_count += 1
        done = result.terminated or result.truncated
        return SpadeObservation(
            text=result.observation,
            env_id=self._episode.env.env_id,
            skill=self._episode.env.skill,
            turn=self._episode.turns,
            truncated=result.truncated,
            won=self._episode.won if done else None,
            error=result.info.get("error"),
            done=done,
            reward=result.reward,
        )

    @property
    def state(self) -> SpadeState:
        return self._state

    def close(self) -> None:
        """Called by the server when a session ends, possibly from a worker thread."""
        episode, self._episode = self._episode, None
        if episode is None or self._loop is None or self._loop.is_closed():
            return

        def schedule() -> None:
            task = asyncio.ensure_future(episode.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

        self._loop.call_soon_threadsafe(schedule)


def make_app(directory: str | Path, max_concurrent_envs: int = 64) -> Any:
    """OpenEnv's FastAPI app serving the bundle in `directory` (checked now, run lazily)."""
    host = EnvHost(directory)
    env_cls = type("SpadeEnvironment", (SpadeEnvironment,), {"host": host})
    app = create_app(
        env_cls,
        SpadeAction,
        SpadeObservation,
        env_name=host.bundle.name,
        max_concurrent_envs=max_concurrent_envs,
    )
    app.router.on_shutdown.append(host.aclose)
    return app


class SpadeEnvClient(EnvClient[SpadeAction, SpadeObservation, SpadeState]):
    """OpenEnv client for a served spade bundle (`reset(seed=, task=)`, `step(SpadeAction)`)."""

    def _step_payload(self, action: SpadeAction) -> dict[str, Any]:
        return {"message": action.message}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SpadeObservation]:
        observation = SpadeObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return StepResult(
            observation=observation, reward=payload.get("reward"), done=observation.done
        )

    def _parse_state(self, payload: dict[str, Any]) -> SpadeState:
        return SpadeState(**payload)
