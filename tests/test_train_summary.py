"""What `spade train` reports about the run itself: the model, its precision, peak memory."""

from __future__ import annotations

import resource
from pathlib import Path

import loopkit  # tests/ is on sys.path (pytest's rootdir-relative import)
import pytest

from spade.pool import Pool
from spade.train import describe_models, peak_rss_mib, train


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
    from spade.backends.local import LocalBackend, LocalConfig
    from spade.loop import Models

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
    from spade.models import local_backend

    assert TINY_CPU.model.trainable_layers == 10 and PAPER_GAMES.model.trainable_layers is None
    top = local_backend(ModelConfig(model="tiny-test", trainable_layers=1), "tiny-test", 0)
    layers = top.model.get_decoder().layers
    assert len(layers) > 1
    assert [any(p.requires_grad for p in layer.parameters()) for layer in layers] == [False] * (
        len(layers) - 1
    ) + [True]
    every = local_backend(ModelConfig(model="tiny-test"), "tiny-test", 0)
    assert all(p.requires_grad for p in every.model.parameters())
