"""The replication's compute controls, through the real loop with the scripted plan
(tests/support/loopplan.py; its values in test_loop_values.py's docstring): the Agent token cap
keeps whole groups and never more tokens than allowed, and `--no-train-designer` keeps the
Designer's samples out of every update while its rewards are still recorded.

Each iteration plays 3 environments x 4 plain plays, every group [1, 0, 1, 0]: 12 Agent samples
(+1 / -1) in 3 groups of 4. The scripted policy answers the same messages the same way, so a
capped run plays exactly the episodes an uncapped one does and only the update differs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.loopplan import by_role, rows, run


def _key(sample) -> tuple:
    return (sample.token_ids, sample.loss_mask, round(sample.advantage, 6))


def _agent_tokens(trainer, update: int) -> int:
    return sum(s.num_trained_tokens for s in by_role(trainer, update, "agent"))


def test_the_agent_token_cap_keeps_whole_groups_within_the_cap(tmp_path: Path) -> None:
    _, free_trainer = run(tmp_path / "free")
    full = [_agent_tokens(free_trainer, u) for u in range(2)]
    assert [len(by_role(free_trainer, u, "agent")) for u in range(2)] == [12, 12]
    cap = min(full) - 1  # one token short of everything: at least one group must go
    capped, capped_trainer = run(tmp_path / "capped", agent_token_cap=cap)
    for u in range(2):
        kept = by_role(capped_trainer, u, "agent")
        assert 0 < _agent_tokens(capped_trainer, u) <= cap
        assert len(kept) in (4, 8)  # whole groups of 4 plays, not all 3
        assert sum(s.advantage for s in kept) == pytest.approx(0.0, abs=1e-6)
        pool = [_key(s) for s in by_role(free_trainer, u, "agent")]
        for s in kept:  # the kept samples are the uncapped run's, in its order
            pool = pool[pool.index(_key(s)) + 1 :]
        assert capped["iterations"][u]["agent_samples"] == len(kept)
    # the cap changes the update only: the same episodes were played
    episodes = "SELECT env_id, iteration, seed, hinted, return_ FROM episodes ORDER BY 1, 2, 3, 4"
    assert rows(tmp_path / "free", episodes) == rows(tmp_path / "capped", episodes)


def test_a_cap_above_the_batch_changes_nothing_and_one_below_every_group_trains_none(
    tmp_path: Path,
) -> None:
    _, free_trainer = run(tmp_path / "free")
    _, roomy_trainer = run(tmp_path / "roomy", agent_token_cap=10**9)
    for u in range(2):
        assert [_key(s) for s in by_role(roomy_trainer, u, "agent")] == [
            _key(s) for s in by_role(free_trainer, u, "agent")
        ]
    smallest = min(s.num_trained_tokens for s in by_role(free_trainer, 0, "agent"))
    starved, starved_trainer = run(tmp_path / "starved", agent_token_cap=smallest)
    assert [m["agent_samples"] for m in starved["iterations"]] == [0, 0]
    assert all(
        not by_role(starved_trainer, u, "agent") for u in range(len(starved_trainer.updates))
    )


def test_an_untrained_designer_designs_and_is_rewarded_but_never_updated(tmp_path: Path) -> None:
    _, trained_trainer = run(tmp_path / "trained")
    frozen, frozen_trainer = run(tmp_path / "frozen", train_designer=False)
    assert by_role(trained_trainer, 1, "designer")  # the window closes at iteration 2
    assert all(
        not by_role(frozen_trainer, u, "designer") for u in range(len(frozen_trainer.updates))
    )
    assert [m["designer_samples"] for m in frozen["iterations"]] == [0, 0]
    # the designs, their admission and their rewards are the trained run's
    rewards = "SELECT env_id, regen, reward, regret FROM designer_rewards ORDER BY 1, 2"
    assert rows(tmp_path / "frozen", rewards) == rows(tmp_path / "trained", rewards)
    assert len(rows(tmp_path / "frozen", rewards)) == 3
    for u in range(2):
        assert [_key(s) for s in by_role(frozen_trainer, u, "agent")] == [
            _key(s) for s in by_role(trained_trainer, u, "agent")
        ]
