"""What `spade train` reports about the run itself: the model, its precision, peak memory; the
paired held-out evaluation (before, after, difference, interval), its before-cache and the
learning curve."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import json
import re
import resource
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from spade.backends.base import Message, Models
from spade.envs.pool import Pool
from spade.evals import before_after, paired
from spade.evals import sets as evalsets
from spade.evals.sets import EvalSet
from spade.train import describe_models, peak_rss_mib, train
from tests.support import loopkit  # tests/ is on sys.path (pytest's rootdir-relative import)
from tests.support.scripted import ScriptedPolicy


def test_summary_and_every_iteration_report_peak_memory(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cfg = loopkit.small_config(run_dir, iterations=1)
    run_dir.mkdir(parents=True)
    with Pool(run_dir / "pool.sqlite") as pool:
        loopkit.add_magic(pool)
    models, _ = loopkit.scripted_models()
    summary = train(cfg, models=models, progress_bars=False, show=lambda s: None)
    (line,) = summary["iterations"]
    # ru_maxrss is KiB on Linux; this process holds at least the interpreter and the pool
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert 20 < line["peak_rss_mib"] <= summary["peak_rss_mib"] <= floor + 1
    assert summary["model"] == {}  # a scripted policy has no weights to describe


def test_the_local_backend_is_described_by_path_size_and_precision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path / "cache"))
    from spade.backends.base import Models
    from spade.backends.local import LocalBackend, LocalConfig

    backend = LocalBackend(LocalConfig(model="tiny-test", precision="fp32"))
    described = describe_models(Models(backend, backend, backend, backend))
    assert described == {
        "path": backend.model_path,
        "precision": "fp32",
        "device": "cpu",
        "parameters": backend.num_parameters,
    }
    assert peak_rss_mib() > 50  # torch and a model are loaded


def test_the_recipe_trainable_layers_reach_the_trained_backend() -> None:
    from spade.config import PAPER_GAMES, TINY_CPU, ModelConfig
    from spade.selfplay.models import local_backend

    assert TINY_CPU.model.trainable_layers == 10 and PAPER_GAMES.model.trainable_layers is None
    top = local_backend(ModelConfig(model="tiny-test", trainable_layers=1), "tiny-test", 0)
    layers = top.model.get_decoder().layers
    assert len(layers) > 1
    assert [any(p.requires_grad for p in layer.parameters()) for layer in layers] == [False] * (
        len(layers) - 1
    ) + [True]
    every = local_backend(ModelConfig(model="tiny-test"), "tiny-test", 0)
    assert all(p.requires_grad for p in every.model.parameters())


# --- the paired evaluation, its before-cache and the learning curve -----------------------------


def _small_sets() -> tuple[EvalSet, EvalSet]:
    """Three near items (add, count_letter, divide) and two far items: fast stand-ins for the
    paired sets."""
    near = evalsets.near_set().programs
    far = evalsets.far_set(reasoning_gym=False).programs
    n = evalsets.NEAR_PER_FAMILY  # families in sorted order: add, add_three, count_letter, divide
    return EvalSet("near", (near[0], near[2 * n], near[3 * n])), EvalSet("far", far[:2])


def _answers(sets: tuple[EvalSet, ...]) -> dict[str, str]:
    """Each item's observation -> its answer, read from the item's own code."""
    out = {}
    for s in sets:
        for p in s.programs:
            observation = re.search(r"return (.*), \{\}\n", p.code)
            answer = re.search(r"expected = (.*)\.lower\(\)", p.code)
            assert observation and answer
            out[ast.literal_eval(observation.group(1))] = ast.literal_eval(answer.group(1))
    return out


def _agent(sets: tuple[EvalSet, ...], trained: Callable[[], bool]) -> ScriptedPolicy:
    """Answers the first near item always and every item once `trained()`; plays MAGIC and
    designs as loopkit's scripted models do."""
    answers = _answers(sets)
    first = next(iter(answers))

    def reply(messages: Sequence[Message]) -> str:
        text = str(messages[-1].get("content", ""))
        if text in answers:
            right = trained() or text == first
            return f"\\boxed{{{answers[text] if right else 'zzz'}}}"
        return loopkit.reply(messages)

    return ScriptedPolicy(reply)


class _Run:
    """An event loop with a started sandbox, for calling the evaluation phases directly."""

    def __enter__(self) -> _Run:
        from spade.sandbox import Sandbox

        self.loop = asyncio.new_event_loop()
        self.sandbox = Sandbox()
        self.loop.run_until_complete(self.sandbox.start())
        return self

    def __call__(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    def __exit__(self, *exc: object) -> None:
        self.loop.run_until_complete(self.sandbox.aclose())
        self.loop.close()


def test_the_before_of_a_model_folder_is_computed_once_and_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path / "cache"))
    sets = _small_sets()
    monkeypatch.setattr(paired, "paired_sets", lambda: sets)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights v1")
    (folder / "spade_bootstrap.json").write_text("{}")  # notes: not part of the fingerprint

    def counting_models() -> tuple[Models, ScriptedPolicy]:
        policy = _agent(sets, trained=lambda: False)
        policy.model_path, policy.precision, policy.device = str(folder), "fp32", "cpu"  # type: ignore[attr-defined]
        return Models(policy, loopkit.FakeTrainer(), policy, loopkit.FakeTrainer()), policy

    cfg = loopkit.small_config(tmp_path / "run", eval_set="paired", heldout_eval=True)
    shown: list[str] = []
    with _Run() as run_async:

        def before(cfg: Any = cfg, use_cache: bool = True) -> tuple[dict, list[int]]:
            models, policy = counting_models()
            record = paired.paired_phase(
                "before", models, run_async.sandbox, cfg, run_async, shown.append, use_cache
            )
            return record, policy.calls

        first, calls = before()
        assert calls == [3, 2]  # near, then far: one batch each
        near, far = first["sets"]["near"], first["sets"]["far"]
        assert (near["outcomes"], far["outcomes"], near["cached"]) == ("100", "00", False)
        assert (first["overall"]["wins"], first["overall"]["episodes"]) == (1, 5)
        assert first["by_family"]["near:add"]["wins"] == 1
        assert first["near_subset_win_rate"] == 1 / 3  # eval_subset 64: all three items
        cached = sorted((tmp_path / "cache" / "evaluations").glob("before-*.json"))
        assert len(cached) == 2

        # the second time, the policy is not asked at all: the outcomes come from the cache
        again, calls = before()
        assert calls == [] and again["sets"]["near"]["cached"] and again["sets"]["far"]["cached"]
        assert {k: v["outcomes"] for k, v in again["sets"].items()} == {"near": "100", "far": "00"}
        assert again["overall"] == first["overall"]
        assert any("from the cache" in line for line in shown)
        # another run seed, the same warm start: shared
        assert before(dataclasses.replace(cfg, seed=5))[1] == []
        # anything the outcomes depend on is in the key: sampling, reply length, weights
        assert before(dataclasses.replace(cfg, eval_temperature=0.7))[1] == [3, 2]
        play = dataclasses.replace(cfg.play, max_tokens=cfg.play.max_tokens + 1)
        assert before(dataclasses.replace(cfg, play=play))[1] == [3, 2]
        assert before(use_cache=False)[1] == [3, 2]  # a resumed Agent is not the folder's
        (folder / "model.safetensors").write_bytes(b"weights v2")
        assert before()[1] == [3, 2]
        assert before()[1] == []
        # "after" is never read from the cache
        models, policy = counting_models()
        paired.paired_phase("after", models, run_async.sandbox, cfg, run_async, shown.append)
        assert policy.calls == [3, 2]


def test_a_paired_run_reports_before_after_difference_interval_and_a_learning_curve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sets = _small_sets()
    monkeypatch.setattr(paired, "paired_sets", lambda: sets)  # played and compared
    monkeypatch.setattr(before_after, "paired_sets", lambda: sets)  # the learning curve's subset
    trainer = loopkit.FakeTrainer()
    agent = _agent(sets, trained=lambda: bool(trainer.updates))  # right after its first update
    models = Models(agent, trainer, agent, trainer)
    run_dir = tmp_path / "run"
    cfg = loopkit.small_config(
        run_dir,
        iterations=2,
        no_design=True,
        heldout_eval=True,
        eval_set="paired",
        eval_every=1,
        eval_subset=2,
    )
    run_dir.mkdir(parents=True)
    with Pool(run_dir / "pool.sqlite") as pool:
        loopkit.add_magic(pool)
    shown: list[str] = []
    summary = train(cfg, models=models, progress_bars=False, show=shown.append)

    evals = json.loads((run_dir / "eval.json").read_text())
    assert summary["eval"] == evals
    assert evals["before"]["sets"]["near"]["outcomes"] == "100"
    assert evals["after"]["sets"]["near"]["outcomes"] == "111"
    assert (evals["after"]["overall"]["wins"], evals["after"]["overall"]["episodes"]) == (5, 5)
    near, far = evals["paired"]["sets"]["near"], evals["paired"]["sets"]["far"]
    # near: item differences (0, +1, +1), d = 2/3; a resample is all zeros with probability
    # 1/27 > 2.5% and all ones with 8/27 > 2.5%, so the interval is [0, 1]
    assert (near["before"], near["after"], near["items"]) == (1 / 3, 1.0, 3)
    assert (near["difference"], near["low"], near["high"]) == (2 / 3, 0.0, 1.0)
    assert (far["difference"], far["low"], far["high"]) == (1.0, 1.0, 1.0)
    assert near["by_family"]["near:add"]["difference"] == 0.0
    assert near["by_family"]["near:divide"]["difference"] == 1.0
    assert "bootstrap" in evals["paired"]["method"]
    assert shown[-2:] == [
        "near set: 33.3% -> 100.0% (+66.7 points, 95% CI [+0.0, +100.0], paired) over 3 items",
        "far set: 0.0% -> 100.0% (+100.0 points, 95% CI [+100.0, +100.0], paired) over 2 items",
    ]
    assert summary["paired"]["near"] == {
        k: near[k] for k in ("items", "before", "after", "difference", "low", "high", "p_value")
    }
    # the learning curve: the subset (items 0 and 1 of the near set) before, then per iteration
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["near_subset_win_rate"] for r in rows] == [1.0, 1.0]
    assert all(r["time/eval_s"] > 0 for r in rows)
    assert summary["learning_curve"] == [
        {"iteration": 0, "near_subset_win_rate": 0.5},
        *(
            {
                "iteration": r["iteration"],
                "plain_win_rate": r["plain_win_rate"],
                "near_subset_win_rate": 1.0,
            }
            for r in rows
        ),
    ]
    # eval_every=2 over 3 iterations: at 2 and at the last
    due = [
        it
        for it in (1, 2, 3)
        if before_after.curve_due(dataclasses.replace(cfg, iterations=3, eval_every=2), it)
    ]
    assert due == [2, 3]
    assert not before_after.curve_due(dataclasses.replace(cfg, heldout_eval=False), 2)
    assert not before_after.curve_due(dataclasses.replace(cfg, eval_every=0), 2)


def test_the_small_recipe_evaluates_on_the_paired_sets_greedily() -> None:
    from spade.config import TINY_CPU, TrainConfig, UsageError

    assert TINY_CPU.eval_set == "paired" and TINY_CPU.eval_temperature == 0.0
    assert (TINY_CPU.eval_every, TINY_CPU.eval_subset) == (4, 84)  # three items a family
    assert len(before_after.heldout_for(TINY_CPU)) == sum(
        len(s.programs) for s in evalsets.paired_sets()
    )
    with pytest.raises(UsageError, match="eval-every"):
        before_after.check_config(TrainConfig(eval_every=-1))
    with pytest.raises(UsageError, match="eval-subset"):
        before_after.check_config(TrainConfig(eval_subset=0))
