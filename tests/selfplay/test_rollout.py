"""`spade.selfplay.rollout.play` with a scripted policy: why each episode ended, as a value."""

from __future__ import annotations

import asyncio

import pytest

from spade.backends.base import SamplingParams
from spade.sandbox import Sandbox, SandboxConfig
from spade.selfplay.rollout import EndedBy, PlayRequest, play
from spade.types import Program
from tests.support import loopkit
from tests.support.scripted import ScriptedPolicy

ENDLESS = '''"""Never ends.

skill: Mathematical Reasoning
hint: none
difficulty: 1-3
turns: multi
"""


class EndlessEnv:
    def __init__(self, max_turns=50, difficulty=1):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.fail = seed == 13
        if self.fail:
            raise RuntimeError("seed 13 is unlucky")
        return "Say anything. " + "padding " * 20, {}

    def step(self, action):
        if "crash" in action:
            raise ValueError("no crashing")
        if "quit" in action:
            return "Bye.", 0.0, False, True, {}
        return "Again. " + "padding " * 20, 0.0, False, False, {}

    def solution(self):
        return ["\\\\boxed{quit}"]
'''


@pytest.fixture(scope="module")
def rollouts():
    magic = Program.from_code(loopkit.MAGIC_ENV, source="t")
    endless = Program.from_code(ENDLESS, source="t")
    replies = {"Seed": "\\boxed{0}", "Say": "\\boxed{hi}", "Again": "\\boxed{hi}"}

    def reply(messages):
        text = str(messages[-1]["content"])
        if "Bye" in text:
            return ""
        return next(r for k, r in replies.items() if text.startswith(k))

    async def run(requests, **kw):
        async with Sandbox(SandboxConfig(warm_workers=1)) as sandbox:
            return await play(
                ScriptedPolicy(reply), sandbox, requests, params=SamplingParams(seed=1), **kw
            )

    plain = asyncio.run(
        run([PlayRequest(magic, 2), PlayRequest(endless, 1), PlayRequest(endless, 13)], max_turns=3)
    )
    crammed = asyncio.run(run([PlayRequest(endless, 1)], max_turns=10, max_context_tokens=600))
    return plain, crammed


def test_ended_by_is_a_value(rollouts) -> None:
    (magic, capped, broken), (crammed,) = rollouts
    assert magic.ended_by is EndedBy.TERMINATED and len(magic.episode.turns) == 1
    assert magic.episode.terminated and not magic.episode.truncated
    assert capped.ended_by is EndedBy.TURN_CAP and len(capped.episode.turns) == 3
    assert capped.episode.truncated and capped.error is None
    assert broken.ended_by is EndedBy.ERROR and broken.error.startswith("reset: ")
    assert broken.return_ == 0.0 and broken.completions == ()
    # 600 tokens of context minus max_tokens 32 for the reply: the second prompt does not fit
    assert crammed.ended_by is EndedBy.CONTEXT and 1 <= len(crammed.episode.turns) < 10
