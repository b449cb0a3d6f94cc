"""Which pool environments the loop plays: new designs first, then the rest of the active set
drawn by `play.pool_sampling` (learning-potential weights or uniform), and the mini seeds."""

from __future__ import annotations

import collections
import dataclasses
import random
from pathlib import Path

import pytest

from spade.config import PlayConfig, TrainConfig
from spade.envs.checks import ValidatorConfig
from spade.envs.duplicates import check_duplicates
from spade.envs.pool import EpisodeRow, Pool
from spade.evals.sets import eval_programs
from spade.selfplay.loop import REPLAY_FLOOR, active_set, replay_weights, weighted_sample
from spade.train import mini_seed_programs, seed_pool
from spade.types import GAME_SKILLS, Program, Verdict


def test_replay_weights_are_outcome_variance_shrunk_toward_the_pool_rate() -> None:
    # pool rate 6 wins / 16 plays = 0.375; 2 pseudo-plays at that rate
    records = {"mixed": (2, 4), "lost": (0, 4), "won": (4, 4), "lost8": (0, 4)}
    w = dict(
        zip(
            ["mixed", "lost", "won", "unplayed"],
            replay_weights(records, ["mixed", "lost", "won", "unplayed"]),
        )
    )

    def expected(wins: int, plays: int) -> float:
        p = (wins + 2 * 0.375) / (plays + 2)
        return p * (1 - p) + REPLAY_FLOOR

    assert w["mixed"] == pytest.approx(expected(2, 4))
    assert w["lost"] == pytest.approx(expected(0, 4))
    assert w["won"] == pytest.approx(expected(4, 4))
    assert w["unplayed"] == pytest.approx(expected(0, 0))
    assert w["mixed"] > w["unplayed"] > w["lost"]
    assert w["mixed"] > w["won"]
    # more evidence of never winning lowers the weight further
    assert (
        replay_weights({"a": (0, 12), "b": (1, 4)}, ["a"])[0]
        < replay_weights({"a": (0, 4), "b": (1, 4)}, ["a"])[0]
    )


def test_replay_weights_without_records_or_wins_are_all_equal() -> None:
    assert len(set(replay_weights({}, ["a", "b", "c"]))) == 1
    # nothing was ever won: every environment (played or not) has the floor weight alone
    assert replay_weights({"a": (0, 4), "b": (0, 8)}, ["a", "b", "c"]) == [REPLAY_FLOOR] * 3


def test_weighted_sample_is_seeded_distinct_and_proportional() -> None:
    weights = [1.0, 3.0, 0.5, 0.5]
    draws = [weighted_sample(weights, 2, random.Random(s)) for s in range(40)]
    assert all(len(set(d)) == 2 for d in draws)
    assert draws == [weighted_sample(weights, 2, random.Random(s)) for s in range(40)]
    assert sorted(weighted_sample(weights, 10, random.Random(0))) == [0, 1, 2, 3]
    firsts = collections.Counter(
        weighted_sample(weights, 1, random.Random(s))[0] for s in range(4000)
    )
    # P(first = i) = w_i / sum(w) = 0.2, 0.6, 0.1, 0.1
    assert firsts[1] / 4000 == pytest.approx(0.6, abs=0.03)
    assert firsts[0] / 4000 == pytest.approx(0.2, abs=0.03)
    with pytest.raises(ValueError, match="positive"):
        weighted_sample([1.0, 0.0], 1, random.Random(0))


def _program(name: str) -> Program:
    code = f'class {name}Env:\n    """{name}."""\n'
    return Program.from_code(code, source=f"design:{name}", hint="", skill=GAME_SKILLS[0])


def _pool_without_records(path: Path) -> Pool:
    pool = Pool(path)
    for p in (_program(n) for n in ("Mixed", "L1", "L2", "L3", "L4", "L5", "New")):
        pool.add_program(p, Verdict(p.env_id, True), 0, {})
    return pool


def _pool_with_records(path: Path, iteration: int = 1) -> tuple[Pool, list[Program]]:
    """Seven admitted environments: one the Agent won 2 of 4 plain plays of (and 4 of 4 hinted
    plays: not counted), five it lost 4 of 4 of, one never played; the plays at `iteration`."""
    pool = _pool_without_records(path)
    programs = pool.admitted()
    it = iteration
    rows = [EpisodeRow(programs[0].env_id, it, s, False, float(s % 2), 1, 5) for s in range(4)]
    rows += [EpisodeRow(programs[0].env_id, it, s, True, 1.0, 1, 5) for s in range(4)]
    rows += [EpisodeRow(p.env_id, it, s, False, 0.0, 1, 5) for p in programs[1:6] for s in range(4)]
    pool.record_episodes(rows)
    return pool, programs


def test_plain_record_counts_plain_wins_and_plays_up_to_an_iteration(tmp_path: Path) -> None:
    pool, programs = _pool_with_records(tmp_path / "pool.sqlite")
    with pool:
        record = pool.plain_record()
        assert record[programs[0].env_id] == (2, 4)
        assert record[programs[1].env_id] == (0, 4)
        assert programs[6].env_id not in record
        assert pool.plain_record(until_iteration=0) == {}


def test_learnable_sampling_replays_what_the_agent_sometimes_wins(tmp_path: Path) -> None:
    pool, _ = _pool_with_records(tmp_path / "pool.sqlite")
    new = _program("Designed")
    counts: dict[str, collections.Counter[str]] = {}
    with pool:
        for mode in ("learnable", "uniform"):
            cfg = TrainConfig(play=PlayConfig(active_envs=3, pool_sampling=mode))  # type: ignore[arg-type]
            counts[mode] = collections.Counter()
            for it in range(2, 402):
                chosen = active_set(it, cfg, pool, [new])
                assert chosen[0] == new and len({p.env_id for p in chosen}) == len(chosen) == 3
                assert chosen == active_set(it, cfg, pool, [new])  # seeded by the iteration
                counts[mode].update(p.source.split(":")[1] for p in chosen[1:])
    learnable, uniform = counts["learnable"], counts["uniform"]
    # pool rate 2/24: Mixed p = (2 + 1/6) / 6 = 0.36, weight 0.23; losers 0.027; New 0.077
    # Mixed is in the two draws ~3/4 of the time, 2/7 of it under uniform sampling
    assert learnable["Mixed"] > 250 and learnable["Mixed"] > 2 * uniform["Mixed"]
    assert learnable["New"] > max(learnable[f"L{i}"] for i in range(1, 6))
    assert all(learnable[f"L{i}"] < 150 for i in range(1, 6))
    # uniform: each of the 7 is in the 2 draws 2/7 of the time (~114 of 400)
    assert all(80 < uniform[n] < 150 for n in ("Mixed", "L1", "L2", "L3", "L4", "L5", "New"))


def test_the_active_set_weighs_only_the_plays_before_its_iteration(tmp_path: Path) -> None:
    # the plays are recorded at iteration 5: the draws of iterations 1 to 5 are those of the same
    # pool without plays (a resumed iteration's own plays do not count), from iteration 6 on they
    # follow the record (with seed 4 the record changes the draw of each of iterations 1 to 7,
    # were it counted: checked by hand, so an off-by-one either way shows)
    cfg = TrainConfig(seed=4, play=PlayConfig(active_envs=3))
    played, _ = _pool_with_records(tmp_path / "played.sqlite", iteration=5)
    fresh = _pool_without_records(tmp_path / "fresh.sqlite")
    with played, fresh:

        def draw(pool: Pool, it: int) -> list[str]:
            return [p.env_id for p in active_set(it, cfg, pool, [])]

        assert [draw(played, it) for it in range(1, 6)] == [draw(fresh, it) for it in range(1, 6)]
        assert draw(played, 6) != draw(fresh, 6)


def test_the_active_set_never_exceeds_the_pool_and_keeps_every_new_design(tmp_path: Path) -> None:
    pool, programs = _pool_with_records(tmp_path / "pool.sqlite")
    with pool:
        cfg = TrainConfig(play=PlayConfig(active_envs=2))
        assert active_set(2, cfg, pool, programs[:4]) == programs[:4]
        cfg = TrainConfig(play=PlayConfig(active_envs=50))
        assert sorted(p.env_id for p in active_set(2, cfg, pool, [])) == sorted(
            p.env_id for p in programs
        )


def test_mini_seeds_are_distinct_and_no_near_duplicate_of_an_evaluation_program() -> None:
    seeds = mini_seed_programs()
    assert seeds == mini_seed_programs()  # deterministic
    assert len(seeds) >= 8 and len({p.env_id for p in seeds}) == len(seeds)
    assert all(p.source.startswith("mini-seed:") and p.skill in GAME_SKILLS for p in seeds)
    evaluation = eval_programs()
    assert all(check_duplicates(p, evaluation, ValidatorConfig()) is None for p in seeds)


def test_seed_pool_adds_the_mini_seeds_only_when_asked(tmp_path: Path) -> None:
    with Pool(tmp_path / "a.sqlite") as with_minis, Pool(tmp_path / "b.sqlite") as without:
        added = seed_pool(with_minis, TrainConfig())
        bare = seed_pool(without, dataclasses.replace(TrainConfig(), mini_seeds=False))
        assert added == bare + len(mini_seed_programs())
        assert seed_pool(with_minis, TrainConfig()) == 0  # once
        sources = {p.source for p in with_minis.admitted()}
        assert {p.source for p in mini_seed_programs()} <= sources
        assert not any(p.source.startswith("mini-seed:") for p in without.admitted())
    from spade.config import PAPER_GAMES

    assert not PAPER_GAMES.mini_seeds and PAPER_GAMES.play.pool_sampling == "uniform"


def test_the_tiny_recipe_seeds_questions_and_minis_but_no_bundled_game(tmp_path: Path) -> None:
    from spade.config import PAPER_GAMES, TINY_CPU
    from spade.envs import bundled
    from spade.templates.questions import TRAIN_FAMILIES
    from spade.train import question_seed_programs

    questions = question_seed_programs()
    assert len(questions) == len(TRAIN_FAMILIES) == 28
    assert all(p.source.startswith("question-seed:") for p in questions)
    with Pool(tmp_path / "tiny.sqlite") as tiny, Pool(tmp_path / "paper.sqlite") as paper:
        assert seed_pool(tiny, TINY_CPU) == len(questions) + len(mini_seed_programs())
        assert {p.source.split(":")[0] for p in tiny.admitted()} == {"question-seed", "mini-seed"}
        games = [p for p in bundled.seed_programs() if p.skill in PAPER_GAMES.design.skills]
        assert seed_pool(paper, PAPER_GAMES) == len(games)
        assert not any(":" in (p.source or "") for p in paper.admitted())


def test_question_seeds_ask_level_1_questions_by_default() -> None:
    import asyncio
    import random

    from spade.sandbox import Sandbox
    from spade.templates import questions
    from spade.train import question_seed_programs

    async def first_observations() -> list[str]:
        async with Sandbox() as sandbox:
            out = []
            for program in question_seed_programs()[:3]:
                async with await sandbox.open(program.code) as env:  # no difficulty given
                    out.append((await env.reset(seed=5))[0])
            return out

    families = sorted(questions.TRAIN_FAMILIES)[:3]
    expected = [questions.draw(f, random.Random(5), 1).text for f in families]
    got = asyncio.run(first_observations())
    assert [o.split("\n")[0] for o in got] == expected
