"""spade.backends.torch_setup: each helper against the machine facts it reads (CPU features,
torch and transformers versions, the C library) faked both ways, and the model surgery
(freezing, LoRA, untying) on the tiny-test model."""

from __future__ import annotations

import json

import pytest
import torch

from spade.backends import torch_setup as ts


# ------------------------------------------------------------------------- device, precision
def test_the_device_is_cuda_only_when_there_is_one(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert ts.resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert ts.resolve_device("auto") == torch.device("cuda")
    assert ts.resolve_device("cpu") == torch.device("cpu")  # a named device as named
    assert ts.resolve_device("cuda:1") == torch.device("cuda:1")


@pytest.mark.parametrize(("avx512", "amx", "native"), [(0, 0, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1)])
def test_native_bf16_is_avx512_bf16_or_amx(monkeypatch, avx512, amx, native) -> None:
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bool(avx512), raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: bool(amx), raising=False)
    assert ts.cpu_has_native_bf16() is bool(native)


class _CpuInfo:
    text: str | None = None

    def __init__(self, path: str) -> None:
        assert path == "/proc/cpuinfo"

    def read_text(self) -> str:
        if self.text is None:
            raise OSError("no /proc here")
        return self.text


@pytest.mark.parametrize(
    ("flags", "native"),
    [
        ("flags\t: fpu sse avx2 avx512f", False),
        ("flags\t: fpu avx512f avx512_bf16 sse", True),
        ("flags\t: fpu amx_bf16 amx_tile", True),
        ("flags\t: fpu xavx512_bf16", False),  # a flag is a whole word
        (None, False),  # no /proc/cpuinfo (macOS)
    ],
)
def test_without_torch_probes_the_kernels_cpu_flags_decide(monkeypatch, flags, native) -> None:
    for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        monkeypatch.delattr(torch.cpu, name, raising=False)  # torch < 2.3 has neither
    monkeypatch.setattr(_CpuInfo, "text", flags)
    monkeypatch.setattr(ts, "Path", _CpuInfo)
    assert ts.cpu_has_native_bf16() is native


def test_auto_precision_follows_the_hardware(monkeypatch) -> None:
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    monkeypatch.setattr(ts, "cpu_has_native_bf16", lambda: True)
    assert ts.resolve_precision("auto", cpu) == "bf16-mixed"
    monkeypatch.setattr(ts, "cpu_has_native_bf16", lambda: False)
    assert ts.resolve_precision("auto", cpu) == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert ts.resolve_precision("auto", cuda) == "bf16-mixed"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    assert ts.resolve_precision("auto", cuda) == "fp32"
    assert ts.resolve_precision("auto", torch.device("meta")) == "fp32"
    for name in ("fp32", "bf16-mixed", "bf16"):
        assert ts.resolve_precision(name, cpu) == name
    with pytest.raises(ValueError, match="unknown precision 'fp16'"):
        ts.resolve_precision("fp16", cpu)


# ------------------------------------------------------------------------------ memory, names
def test_free_memory_goes_back_through_malloc_trim(monkeypatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(ts, "_MALLOC_TRIM", calls.append)
    ts.release_free_memory()
    assert calls == [0]
    monkeypatch.setattr(ts, "_MALLOC_TRIM", False)  # not glibc: nothing to call
    ts.release_free_memory()
    assert calls == [0]


def test_a_c_library_without_malloc_trim_is_remembered(monkeypatch) -> None:
    import ctypes

    opened: list[str] = []

    def no_trim(name: str):
        opened.append(name)
        raise OSError("not glibc")

    monkeypatch.setattr(ts, "_MALLOC_TRIM", None)
    monkeypatch.setattr(ctypes, "CDLL", no_trim)
    ts.release_free_memory()
    ts.release_free_memory()
    assert ts._MALLOC_TRIM is False and len(opened) == 1  # looked up once


def test_model_names_become_folders(monkeypatch, tmp_path) -> None:
    from spade.backends import smollm

    asked: list[bool] = []

    def fake_default(progress: bool = True):
        asked.append(progress)
        return tmp_path / "smollm2"

    monkeypatch.setattr(smollm, "default_model_path", fake_default)
    assert ts.model_path("smollm2", progress=False) == str(tmp_path / "smollm2")
    assert asked == [False]
    monkeypatch.setattr(ts.tiny, "tiny_model_path", lambda name: tmp_path / name)
    assert ts.model_path("tiny-test") == str(tmp_path / "tiny-test")
    assert ts.model_path("/models/mine") == "/models/mine"  # anything else unchanged
    assert ts.model_path("org/hub-id") == "org/hub-id"


@pytest.mark.parametrize(
    ("version", "kwarg"),
    [("4.55.2", "torch_dtype"), ("4.56.0", "dtype"), ("4.60.1", "dtype"), ("5.1.0", "dtype")],
)
def test_the_dtype_keyword_follows_transformers(monkeypatch, version, kwarg) -> None:
    import transformers

    monkeypatch.setattr(transformers, "__version__", version)
    assert ts.dtype_kwarg() == kwarg


class _Model(torch.nn.Module):
    def __init__(self, eos: object = None, config: bool = True) -> None:
        super().__init__()
        if config:
            self.generation_config = type("G", (), {"eos_token_id": eos})()


def test_generation_eos_reads_one_id_or_several() -> None:
    assert ts.generation_eos(_Model(eos=2)) == {2}
    assert ts.generation_eos(_Model(eos=[2, 7])) == {2, 7}
    assert ts.generation_eos(_Model(eos=(3,))) == {3}
    assert ts.generation_eos(_Model(eos=None)) == set()
    assert ts.generation_eos(_Model(config=False)) == set()


# ------------------------------------------------------------------------------- optimizer
def test_fused_adamw_where_torch_has_it(monkeypatch) -> None:
    monkeypatch.setattr(torch, "__version__", "2.4.0+cpu")
    assert ts.fused_adamw(torch.device("cpu")) == {"fused": True}
    monkeypatch.setattr(torch, "__version__", "2.3.1")  # no fused CPU kernel before 2.4
    assert ts.fused_adamw(torch.device("cpu")) == {}
    assert ts.fused_adamw(torch.device("cuda")) == {"fused": True}

    class OldAdamW:
        def __init__(self, params, lr=1e-3, foreach=None) -> None: ...

    monkeypatch.setattr(torch.optim, "AdamW", OldAdamW)
    assert ts.fused_adamw(torch.device("cuda")) == {}


# ----------------------------------------------------------------------- model surgery
@pytest.fixture
def tiny_model(make_local):
    from transformers import AutoModelForCausalLM

    from spade.backends.tiny import tiny_model_path

    make_local()  # tiny-test in the cache
    path = tiny_model_path("tiny-test")
    return path, AutoModelForCausalLM.from_pretrained(path)


def test_freezing_keeps_the_top_layers_and_the_norm(tiny_model) -> None:
    _, model = tiny_model
    layers = model.get_decoder().layers
    ts.freeze_lower_layers(model, 1)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    top = f"model.layers.{len(layers) - 1}."
    assert trainable and all(n.startswith(top) or n == "model.norm.weight" for n in trainable)
    assert "model.norm.weight" in trainable
    assert sum(n.startswith(top) for n in trainable) == len(list(layers[-1].parameters()))
    ts.freeze_lower_layers(model, len(layers) + 5)  # more than it has: every layer, no embeddings
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert all(f"model.layers.{i}.self_attn.q_proj.weight" in trainable for i in range(len(layers)))
    assert "model.embed_tokens.weight" not in trainable
    with pytest.raises(ValueError, match="at least 1"):
        ts.freeze_lower_layers(model, 0)


def test_a_decoder_without_a_final_norm_freezes_its_lower_layers() -> None:
    class Decoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.decoder = Decoder()

        def get_decoder(self):
            return self.decoder

    model = Model()
    ts.freeze_lower_layers(model, 2)
    assert [layer.weight.requires_grad for layer in model.decoder.layers] == [False, True, True]


def test_freezing_needs_decoder_layers() -> None:
    class Flat(torch.nn.Module):
        def get_decoder(self):
            return torch.nn.Linear(2, 2)

    with pytest.raises(ValueError, match="Flat: no decoder layers"):
        ts.freeze_lower_layers(Flat(), 1)


def test_lora_settings_reach_peft(tiny_model) -> None:
    pytest.importorskip("peft")
    _, model = tiny_model
    # not peft's own default (q_proj, v_proj), so the setting must get through
    settings = ts.LoraSettings(r=4, alpha=12, dropout=0.1, target_modules=("k_proj", "o_proj"))
    wrapped = ts.with_lora(model, settings)
    config = wrapped.peft_config["default"]
    assert (config.r, config.lora_alpha, config.lora_dropout) == (4, 12, 0.1)
    assert set(config.target_modules) == {"k_proj", "o_proj"}
    assert config.task_type == "CAUSAL_LM"
    trainable = [n for n, p in wrapped.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert all("k_proj" in n or "o_proj" in n for n in trainable)


def test_lora_on_all_linear_layers_by_default(tiny_model) -> None:
    pytest.importorskip("peft")
    _, model = tiny_model
    wrapped = ts.with_lora(model, ts.LoraSettings(r=2))
    adapted = {n.split(".lora_")[0].rsplit(".", 1)[-1] for n, _ in wrapped.named_parameters()}
    assert {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"} <= adapted
    assert not any("lm_head.lora" in n for n, _ in wrapped.named_parameters())


def test_lora_without_peft_says_what_to_install(tiny_model, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "peft", None)  # as if not installed
    with pytest.raises(ImportError, match=r"^LoRA needs peft: pip install 'spade-rl\[lora\]'$"):
        ts.with_lora(tiny_model[1], ts.LoraSettings())


def test_a_lora_backend_exports_its_adapter_alone(make_local, tmp_path) -> None:
    pytest.importorskip("peft")
    from safetensors.torch import load_file

    lora = make_local(lora=ts.LoraSettings(r=2, alpha=4))
    out = lora.export_adapter(tmp_path / "adapter")
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 2
    tensors = load_file(str(out / "adapter_model.safetensors"))
    assert tensors and all("lora_" in name for name in tensors)
    with pytest.raises(
        ValueError, match=r"^export_adapter: this backend trains full weights, not a LoRA adapter$"
    ):
        make_local().export_adapter(tmp_path / "none")


def test_a_lora_backend_exports_merged_weights_and_keeps_its_adapter(make_local, tmp_path) -> None:
    # export merges the adapter into a copy: the folder is a plain model that samples what the
    # LoRA backend samples, and the backend itself keeps training its adapter
    pytest.importorskip("peft")
    from spade.backends import SamplingParams, episode_sample

    lora = make_local(lora=ts.LoraSettings(r=2, alpha=4), learning_rate=5e-2)
    prompts = [[{"role": "user", "content": "Guess a number between 1 and 10."}]]
    params = SamplingParams(max_tokens=8, seed=3)
    samples = [episode_sample(lora.sample(prompts, params), 1.0, "agent")]
    lora.update(samples)
    before = lora.sample(prompts, params)
    merged = make_local(model=str(lora.export(tmp_path / "merged")))
    assert not any("lora_" in name for name, _ in merged.model.named_parameters())
    assert [c.completion_ids for c in merged.sample(prompts, params)] == [
        c.completion_ids for c in before
    ]
    assert lora.sample(prompts, params) == before  # the backend's model was not merged in place
    trainable = [n for n, p in lora.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)


def test_an_untied_copy_has_its_own_head_and_the_same_outputs(tiny_model, tmp_path) -> None:
    from transformers import AutoModelForCausalLM

    path, tied = tiny_model
    out = ts.untie_embeddings(path, tmp_path / "untied")
    assert json.loads((out / "config.json").read_text())["tie_word_embeddings"] is False
    assert (out / "tokenizer.json").is_file()
    untied = AutoModelForCausalLM.from_pretrained(out)
    head, embed = untied.lm_head.weight, untied.get_input_embeddings().weight
    assert head.data_ptr() != embed.data_ptr() and torch.equal(head, embed)
    x = torch.tensor([[3, 5, 7, 9]])
    assert torch.equal(tied(x).logits, untied(x).logits)
    with torch.no_grad():
        embed.add_(1.0)  # the head no longer follows the embeddings
    assert not torch.equal(untied.lm_head.weight, embed)
    with pytest.raises(ValueError, match="not tied"):
        ts.untie_embeddings(str(out), tmp_path / "again")


def test_untying_keeps_the_dtype_and_writes_anywhere(tiny_model, tmp_path) -> None:
    from safetensors.torch import load_file

    path, model = tiny_model
    half = tmp_path / "bf16"
    model.to(torch.bfloat16).save_pretrained(half)
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(path).save_pretrained(half)
    out = ts.untie_embeddings(str(half), tmp_path / "a" / "b" / "untied")  # parents created
    tensors = load_file(str(out / "model.safetensors"))
    assert {t.dtype for t in tensors.values()} == {torch.bfloat16}  # loaded as saved ("auto")
    existing = tmp_path / "existing"
    existing.mkdir()
    assert ts.untie_embeddings(path, existing) == existing  # an existing folder is fine


def test_untying_a_model_without_an_output_layer_or_with_a_text_config(
    tiny_model, tmp_path, monkeypatch
) -> None:
    from transformers import AutoModelForCausalLM, PretrainedConfig

    path, model = tiny_model
    load = AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(type(model), "get_output_embeddings", lambda self: None)
    with pytest.raises(ValueError, match="ForCausalLM has no output embeddings to untie"):
        ts.untie_embeddings(path, tmp_path / "x")
    monkeypatch.undo()

    def nested(*args, **kwargs):  # a multimodal-style config that nests the text model's
        m = load(*args, **kwargs)
        m.config.text_config = PretrainedConfig(tie_word_embeddings=True)
        return m

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", nested)
    out = ts.untie_embeddings(path, tmp_path / "nested")
    config = json.loads((out / "config.json").read_text())
    assert config["tie_word_embeddings"] is False
    assert config["text_config"]["tie_word_embeddings"] is False
