"""The embedded model: sizes, tokenizer, and the cache keyed by preset, seed and shipped text."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from spade.backends import tiny


def params_of(path):
    return json.loads((path / "spade_tiny.json").read_text())["parameters"]


def test_preset_sizes(tmp_path):
    assert sorted(tiny.PRESETS) == ["tiny-test"]
    assert 900_000 <= params_of(tiny.tiny_model_path("tiny-test", root=tmp_path)) <= 1_200_000


def test_cache_is_reused_and_keyed_by_seed(tmp_path):
    a = tiny.tiny_model_path("tiny-test", root=tmp_path)
    stamp = (a / "model.safetensors").stat().st_mtime_ns
    assert tiny.tiny_model_path("tiny-test", root=tmp_path) == a
    assert (a / "model.safetensors").stat().st_mtime_ns == stamp  # not rebuilt
    b = tiny.tiny_model_path("tiny-test", seed=1, root=tmp_path)
    assert b != a
    assert (a / "tokenizer.json").read_text() == (
        b / "tokenizer.json"
    ).read_text()  # same text, same BPE
    assert (a / "model.safetensors").read_bytes() != (b / "model.safetensors").read_bytes()
    assert not [
        p for p in (tmp_path / "models").iterdir() if p.name.startswith(".")
    ]  # no leftovers


def test_the_key_covers_the_shipped_text():
    config = tiny.PRESETS["tiny-test"]
    assert config.key("corpus-a") != config.key("corpus-b")


def test_default_cache_dir_honours_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPADE_CACHE_DIR", str(tmp_path / "c"))
    assert tiny.cache_dir() == tmp_path / "c"


def test_tokenizer_round_trips_code_and_splits_digits(tiny_tokenizer):
    code = (
        'def step(self, action):\n    return f"\\\\boxed{{{self.x}}}", 1.0, True, False, {}\n'
        "  ünïcode ✓"
    )
    ids = tiny_tokenizer(code, add_special_tokens=False)["input_ids"]
    assert tiny_tokenizer.decode(ids) == code
    assert len(tiny_tokenizer("12345", add_special_tokens=False)["input_ids"]) == 5
    for special in tiny.SPECIAL_TOKENS:
        assert len(tiny_tokenizer(special, add_special_tokens=False)["input_ids"]) == 1
    assert tiny_tokenizer.eos_token == "<|im_end|>"


def test_unknown_preset_is_named():
    with pytest.raises(ValueError, match="unknown tiny preset"):
        tiny.resolve("huge")
