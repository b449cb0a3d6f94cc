"""Agent rollouts: a Policy plays sandboxed environments, many episodes in flight at once.

Turn-synchronous batching: every episode still running contributes its next prompt to one
`policy.sample` call per turn (what a batched engine wants, the local backend), then all
environments step concurrently in their sandbox workers. A Policy that serves concurrent
requests (`concurrent = True`: VLLMPolicy, OpenAICompatPolicy) is instead asked one episode at a
time, from threads, and each episode steps as soon as its own reply arrives: no turn waits for
the batch's slowest reply (the server batches the requests in flight itself). Conversations are
extended token-in/token-out with `policy.extend`, so the tokens trained on are exactly the tokens
sampled.

An episode ends when the environment terminates or truncates it, at `max_turns` (the runtime's
cap), when the next prompt would not fit `max_context_tokens`, or when the environment fails
(a SandboxError: the rollout carries the reason and is not trained on).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from spade.backends.base import Completion, Policy, Prompt, SamplingParams
from spade.envs.episode import to_action
from spade.prompts import agent_messages, observation_message
from spade.sandbox import SandboxAPI, SandboxError, SessionAPI
from spade.types import Episode, Program, Turn


class EndedBy(str, enum.Enum):
    """Why an episode ended."""

    TERMINATED = "terminated"
    """The environment said the episode is over."""
    TRUNCATED = "truncated"
    """The environment cut it (its own turn limit)."""
    TURN_CAP = "turn_cap"
    """Our `max_turns`."""
    CONTEXT = "context"
    """The next prompt would not fit `max_context_tokens`."""
    ERROR = "error"
    """The environment failed (load, reset or step); see `Rollout.error`."""


@dataclasses.dataclass(frozen=True)
class PlayRequest:
    program: Program
    seed: int
    hinted: bool = False
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Constructor keyword arguments (for example `difficulty`)."""
    play: int = 0
    """Which play of this seed (several plays of one environment may share a seed)."""


@dataclasses.dataclass(frozen=True)
class Rollout:
    request: PlayRequest
    episode: Episode
    completions: tuple[Completion, ...]
    ended_by: EndedBy
    error: str | None = None

    @property
    def return_(self) -> float:
        return 0.0 if self.error else self.episode.return_

    @property
    def tokens(self) -> int:
        return sum(len(c.completion_ids or ()) for c in self.completions)


@dataclasses.dataclass
class _Live:
    request: PlayRequest
    session: SessionAPI | None
    prompt: Prompt | None = None
    first_observation: str = ""
    turns: list[Turn] = dataclasses.field(default_factory=list)
    completions: list[Completion] = dataclasses.field(default_factory=list)
    ended_by: EndedBy | None = None
    error: str | None = None


async def _start(sandbox: SandboxAPI, request: PlayRequest, max_turns: int) -> _Live:
    try:
        session = await sandbox.open(
            request.program.code, max_turns=max_turns, kwargs=dict(request.kwargs)
        )
    except SandboxError as err:
        return _Live(request, None, ended_by=EndedBy.ERROR, error=f"load: {err.message}")
    live = _Live(request, session)
    try:
        observation, _info = await session.reset(request.seed)
    except SandboxError as err:
        live.ended_by, live.error = EndedBy.ERROR, f"reset: {err.message}"
        return live
    assert session.info is not None
    live.first_observation = observation
    hint = request.program.hint if request.hinted else None
    live.prompt = Prompt.of(
        agent_messages(observation, session.info.kind, session.info.tools, hint)
    )
    return live


async def _step(
    live: _Live, completion: Completion, policy: Policy, max_turns: int, room: int | None
) -> None:
    session = live.session
    assert session is not None and session.info is not None and live.prompt is not None
    reply = completion.text
    action = to_action(session, reply)
    live.completions.append(completion)
    try:
        result = await session.step(action)
    except SandboxError as err:
        live.ended_by, live.error = EndedBy.ERROR, f"step {len(live.turns) + 1}: {err.message}"
        return
    live.turns.append(
        Turn(reply, action, result.observation, result.reward, result.terminated, result.truncated)
    )
    if result.terminated or result.truncated:
        live.ended_by = EndedBy.TERMINATED if result.terminated else EndedBy.TRUNCATED
    elif len(live.turns) >= min(max_turns, session.info.max_turns or max_turns):
        live.ended_by = EndedBy.TURN_CAP
    else:
        live.prompt = policy.extend(
            live.prompt, completion, [observation_message(result.observation)]
        )
        if room is not None and live.prompt.token_ids is not None:
            if len(live.prompt.token_ids) > room:
                live.ended_by = EndedBy.CONTEXT


def _finish(live: _Live) -> Rollout:
    terminated = live.ended_by is EndedBy.TERMINATED
    episode = Episode(
        live.request.program.env_id,
        live.request.seed,
        live.first_observation,
        tuple(live.turns),
        terminated=terminated,
        truncated=not terminated,
    )
    return Rollout(
        live.request, episode, tuple(live.completions), live.ended_by or EndedBy.ERROR, live.error
    )


async def play(
    policy: Policy,
    sandbox: SandboxAPI,
    requests: Sequence[PlayRequest],
    *,
    params: SamplingParams,
    max_turns: int = 25,
    max_context_tokens: int | None = None,
) -> list[Rollout]:
    """Play every request to its end; results in request order.

    `params.seed` (when set) is offset by the turn index, so a rerun samples the same replies.
    """
    lives = list(await asyncio.gather(*(_start(sandbox, r, max_turns) for r in requests)))
    room = None if max_context_tokens is None else max_context_tokens - params.max_tokens
    try:
        if getattr(policy, "concurrent", False):
            await _play_concurrently(policy, lives, params, max_turns, room)
            return [_finish(live) for live in lives]
        for turn in range(max_turns):
            running = [live for live in lives if live.ended_by is None]
            if not running:
                break
            seed = None if params.seed is None else params.seed + 1_000_003 * turn
            batch_params = dataclasses.replace(params, seed=seed)
            prompts = [live.prompt for live in running]
            completions = policy.sample(prompts, batch_params)  # type: ignore[arg-type]
            await asyncio.gather(
                *(
                    _step(live, completion, policy, max_turns, room)
                    for live, completion in zip(running, completions, strict=True)
                )
            )
    finally:
        await asyncio.gather(*(live.session.close() for live in lives if live.session))
    return [_finish(live) for live in lives]


CONCURRENT_REQUESTS = 256
"""Most episodes waiting on a concurrent Policy at once (threads of one `play`)."""


async def _play_concurrently(
    policy: Policy, lives: list[_Live], params: SamplingParams, max_turns: int, room: int | None
) -> None:
    """Each episode samples its own next reply and steps on it, independently of the others.

    Seeds: episode `i`'s reply at turn `t` samples with a seed derived from (params.seed, t, i),
    so a rerun samples the same replies whatever order the server answers in."""
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=max(1, min(CONCURRENT_REQUESTS, len(lives)))) as pool:

        async def run(index: int, live: _Live) -> None:
            for turn in range(max_turns):
                if live.ended_by is not None:
                    return
                seed = None
                if params.seed is not None:
                    seed = (params.seed * 1_000_003 + turn) * 1_000_033 + index
                turn_params = dataclasses.replace(
                    params, seed=None if seed is None else seed % 2**62
                )
                prompt: Prompt | None = live.prompt
                assert prompt is not None
                (completion,) = await loop.run_in_executor(
                    pool, policy.sample, [prompt], turn_params
                )
                await _step(live, completion, policy, max_turns, room)

        await asyncio.gather(*(run(i, live) for i, live in enumerate(lives)))
