"""A bundle exported as GEM environments, made with `gem.make` and played in this process:
the programs run in the sandbox (the marker program's file never appears on this host)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from exportkit import WRONG, solution_of

from spade.exports import export
from spade.types import Program

gem = pytest.importorskip("gem")


@pytest.fixture
def gem_ids(tmp_path: Path, programs: list[Program]) -> list[str]:
    export(programs, tmp_path, "gem", "gemdemo")
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("gemdemo")
        yield module.IDS
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("gemdemo", None)
        from gem.envs.registration import ENV_REGISTRY

        from spade.exports.host import close_shared_hosts

        for env_id in module.IDS:
            ENV_REGISTRY.pop(env_id, None)
        close_shared_hosts()


def play(env: object, replies: list[str], seed: int) -> tuple[str, list[tuple]]:
    first, _ = env.reset(seed=seed)  # type: ignore[attr-defined]
    steps = []
    for reply in replies:
        steps.append(env.step(reply))  # type: ignore[attr-defined]
        if steps[-1][2] or steps[-1][3]:
            break
    return first, steps


def test_solution_wins_and_a_wrong_reply_loses(
    tmp_path: Path, gem_ids: list[str], marker_path: Path
) -> None:
    assert gem_ids == ["spade:gemdemo-v0"] + [f"spade:gemdemo-{i:03d}-v0" for i in range(3)]
    for index, env_id in enumerate(gem_ids[1:]):
        env = gem.make(env_id)
        replies = solution_of(tmp_path / "gemdemo", index, seed=5)
        with pytest.raises(RuntimeError, match="before reset"):
            env.solution()
        first, steps = play(env, replies, seed=5)
        assert first and steps[-1][2] and steps[-1][1] > 0 and steps[-1][4]["won"] is True
        env.reset(seed=5)
        assert env.solution() == replies  # GEM callers can ask the program too
        _, steps = play(env, [WRONG] * 30, seed=5)
        assert steps[-1][4]["won"] is False and steps[-1][1] <= 0
        assert steps[-1][2] or steps[-1][3]
        env.close()
    assert not marker_path.exists()  # the marker program ran, but not here
    _, info = gem.make(gem_ids[3]).reset(seed=1)
    assert info["env_id"]


def test_the_pool_id_draws_an_environment_with_the_seed(gem_ids: list[str]) -> None:
    env = gem.make(gem_ids[0])
    drawn = {env.reset(seed=s)[1]["env_id"] for s in range(12)}
    assert len(drawn) >= 2
    assert env.reset(seed=3)[1]["env_id"] == env.reset(seed=3)[1]["env_id"]
    fixed = gem.make(gem_ids[0], task=1)
    assert {fixed.reset(seed=s)[1]["env_id"] for s in range(4)} == {fixed.reset()[1]["env_id"]}


def test_step_after_the_end_is_an_error(gem_ids: list[str]) -> None:
    env = gem.make(gem_ids[1])
    env.reset(seed=0)
    env.step(WRONG)
    env.step(WRONG)
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(WRONG)
