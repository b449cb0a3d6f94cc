"""Play one episode of a sandboxed environment with a scripted policy (probes, replays, humans).

The model-driven rollout builds on the same rules: game replies are reduced to their first
`\\boxed{}` (re-wrapped), tool-use replies go to the environment as written, and the runtime
truncates an episode at `max_turns` steps whatever the environment says.
"""

from __future__ import annotations

from collections.abc import Callable

from spade.sandbox import SessionAPI
from spade.sandbox.runtime import game_action
from spade.types import TOOL, Episode, Turn

ReplyFn = Callable[[int, str], "str | None"]
"""(turn index, last observation) -> the agent's reply, or None to stop early: a scripted
player (a probe, a replay, a person), not a model (`spade.backends.base.Policy`)."""


def to_action(session: SessionAPI, reply: str) -> str:
    assert session.info is not None
    return reply if session.info.kind == TOOL else game_action(reply)


async def run_episode(
    session: SessionAPI, policy: ReplyFn, *, seed: int | None, max_turns: int, env_id: str = ""
) -> Episode:
    """Reset with `seed`, then step with the policy's replies until the episode ends.

    Raises SandboxError when the environment misbehaves; the caller decides what that means.
    """
    if session.info is not None and session.info.max_turns:  # the game's own, lower cap
        max_turns = min(max_turns, session.info.max_turns)
    observation, _info = await session.reset(seed)
    first = observation
    turns: list[Turn] = []
    terminated = truncated = False
    for t in range(max_turns):
        reply = policy(t, observation)
        if reply is None:
            break
        action = to_action(session, reply)
        result = await session.step(action)
        observation = result.observation
        turns.append(
            Turn(reply, action, observation, result.reward, result.terminated, result.truncated)
        )
        terminated, truncated = result.terminated, result.truncated
        if terminated or truncated:
            break
    else:
        truncated = not terminated  # the runtime's turn cap
    return Episode(env_id, seed, first, tuple(turns), terminated, truncated)


def replay(replies: list[str]) -> ReplyFn:
    """A policy that sends `replies` in order, then stops."""
    return lambda t, _obs: replies[t] if t < len(replies) else None
