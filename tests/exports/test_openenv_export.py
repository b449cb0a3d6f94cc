"""A bundle exported as an OpenEnv environment: served by its own `server/app.py` (OpenEnv's
FastAPI app) in a subprocess, checked by OpenEnv's validators and played over WebSocket with the
real `EnvClient`; the programs run in the server's spade sandbox."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from exportkit import WRONG, solution_of

from spade.exports import export
from spade.types import Program

pytest.importorskip("openenv")
requests = pytest.importorskip("requests")


@pytest.fixture
def served(tmp_path: Path, programs: list[Program]) -> Iterator[tuple[Path, str]]:
    directory = tmp_path / "oedemo"
    export(programs, directory, "openenv", "oedemo")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "server.app", "--host", "127.0.0.1", "--port", str(port)],
        cwd=directory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{url}/health", timeout=1)
                break
            except requests.ConnectionError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"server did not start: {server.stderr.read()}") from None
                time.sleep(0.2)
        yield directory, url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_openenv_validates_the_layout_and_the_running_server(served: tuple[Path, str]) -> None:
    from openenv.cli._validation import (
        validate_multi_mode_deployment,
        validate_running_environment,
    )

    directory, url = served
    _, issues = validate_multi_mode_deployment(directory)
    assert [i for i in issues if "uv.lock" not in i] == []  # a lock file needs `uv lock`
    report = validate_running_environment(url)
    assert report["passed"], report["criteria"]


def test_the_client_wins_with_the_solution_and_loses_otherwise(
    served: tuple[Path, str], marker_path: Path
) -> None:
    sys.path.insert(0, str(served[0].parent))
    try:
        from oedemo import SpadeAction, SpadeEnvClient
    finally:
        sys.path.remove(str(served[0].parent))
    directory, url = served
    with SpadeEnvClient(base_url=url).sync() as env:
        for task in range(3):
            replies = solution_of(directory, task, seed=7)
            result = env.reset(seed=7, task=str(task))
            assert result.observation.text and not result.done
            for reply in replies:
                result = env.step(SpadeAction(message=f"My answer: {reply}"))
            assert result.done and result.observation.won is True and result.reward > 0
            result = env.reset(seed=7, task=str(task))
            while not result.done:
                result = env.step(SpadeAction(message=WRONG))
            assert result.observation.won is False and (result.reward or 0) <= 0
        state = env.state()
        assert state.env_id and state.seed == 7 and state.step_count >= 1
        drawn = {env.reset(seed=s).observation.env_id for s in range(12)}
        assert len(drawn) >= 2  # without a task, the seed draws an environment
    assert not marker_path.exists()  # the marker program ran in the server's sandbox only
