"""A bundle exported as a verifiers (0.4) package: loaded with `vf.load_environment` and played
by verifiers' own Agent stack (its `null` chat harness in a local process, the model a fake
OpenAI server speaking the streaming chat API with scripted replies); the programs run in the
sandbox. Needs `uv` (in the `verifiers` extra: verifiers runs its chat program with it) and
PyPI the first time."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from exportkit import WRONG, solution_of

from spade.exports import export
from spade.types import Program

vf = pytest.importorskip("verifiers.v1")


class ScriptedModel:
    """An OpenAI-compatible server whose replies are set by the test, streamed as SSE."""

    def __init__(self) -> None:
        self.replies: list[str] = []
        self.requests: list[dict] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                model.requests.append(body)
                text = model.replies.pop(0) if model.replies else WRONG
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0}
                chunks = [
                    {**chunk, "choices": [{"index": 0, "delta": {"content": text}}]},
                    {
                        **chunk,
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    },
                ]
                data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                out = data.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def package(tmp_path: Path, programs: list[Program]) -> Iterator[object]:
    export(programs, tmp_path, "verifiers", "vfdemo")
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("vfdemo")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("vfdemo", None)


@pytest.mark.slow
def test_verifiers_plays_the_export(
    tmp_path: Path, package: object, marker_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    config = package.SpadeEnvConfig(taskset={"id": "vfdemo", "seeds": 2})  # type: ignore[attr-defined]
    env = vf.load_environment(config)
    tasks = list(env.taskset)
    assert len(tasks) == 6 and [t.data.seed for t in tasks] == [0, 0, 0, 1, 1, 1]
    model = ScriptedModel()
    ctx = vf.ModelContext(
        model="scripted", client=vf.EvalClientConfig(base_url=model.url, api_key_var="FAKE_KEY")
    )

    answers = [solution_of(tmp_path / "vfdemo", index, seed=1) for index in range(3)]

    async def play() -> list[tuple[float, bool, int]]:
        outcomes = []
        async with env.serving():
            for task, answer in zip(tasks[3:], answers, strict=True):
                for replies in (answer, []):  # the solution, then wrong replies only
                    model.replies = list(replies)
                    episode = await env.run_episode(task, ctx)
                    assert episode.ok, episode.errors
                    (trace,) = episode.traces
                    info = trace.info
                    outcomes.append(
                        (
                            trace.rewards["spade_return"].score,
                            info["spade_won"],
                            info["spade_turns"],
                        )
                    )
        return outcomes

    outcomes = asyncio.run(play())
    wins, losses = outcomes[0::2], outcomes[1::2]
    assert all(r == 1.0 and won and turns >= 1 for r, won, turns in wins), outcomes
    assert all(r <= 0 and not won and turns >= 1 for r, won, turns in losses), outcomes
    first_prompt = model.requests[0]["messages"][-1]["content"]
    assert "\\boxed{move}" in first_prompt  # spade's Agent instructions open the exchange
    assert not marker_path.exists()
