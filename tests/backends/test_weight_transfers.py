"""The `lora` and `nccl` weight transfers and the untied copy `disk` needs, against fake vLLM
servers over real HTTP: each server's calls, in order and with their bodies, the model later
completions ask for, restarted servers brought back, and the refusals that keep a run from
training one model while the servers sample another."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import ClassVar

import pytest

from spade.backends import SamplingParams, episode_sample
from spade.backends.vllm import VLLMConfig, VLLMPolicy
from spade.backends.weight_sync import SyncedTrainer, VLLMWeightSync

CONVERSATION = [{"role": "user", "content": "Guess my number. Answer \\boxed{n}."}]
PARAMS = SamplingParams(max_tokens=4, seed=9)
AFTER = ["/update_weight_version", "/reset_prefix_cache"]


def _requests(url: str) -> list[dict]:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/requests") as r:
        return json.loads(r.read())


def _control(url: str) -> list[dict]:
    return [c for c in _requests(url) if c["_path"] != "/v1/completions"]


def _policy(urls: list[str], local) -> VLLMPolicy:
    config = VLLMConfig(
        tuple(urls), model="fake", tokenizer="t", backoff_s=0.01, max_retries=1, version_check_s=0
    )
    return VLLMPolicy(config, tokenizer=local.tokenizer)


def _update(local, trainer) -> dict:
    completion = local.sample([CONVERSATION], PARAMS)[0]
    return trainer.update([episode_sample([completion], advantage=1.0, role="agent")])


def _restart(fake_vllm, url: str, *args: str) -> None:
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    fake_vllm.stop(url)
    assert fake_vllm.start(*args, port=port) == url  # back, with its launch weights


# ------------------------------------------------------------------------------------- lora
@pytest.fixture
def lora_run(fake_vllm, make_local, tmp_path):
    pytest.importorskip("peft")
    from spade.backends.torch_setup import LoraSettings

    urls = [fake_vllm.start("--served-model-name", "fake") for _ in range(2)]
    local = make_local(lora=LoraSettings(r=4, alpha=8), learning_rate=5e-2)
    policy = _policy(urls, local)
    sync = VLLMWeightSync(policy, tmp_path / "weights", transfer="lora", lora_name="adapter")
    return urls, local, policy, SyncedTrainer(local, sync)


def test_lora_moves_the_adapter_alone_and_samples_it_from_then_on(lora_run, tmp_path) -> None:
    urls, local, policy, trainer = lora_run  # tiny-test ties its embeddings: fine for LoRA
    before = policy.sample([CONVERSATION], PARAMS)[0]
    asked = [c["model"] for url in urls for c in _requests(url) if "model" in c]
    assert before.weight_version == 0 and asked == ["fake"]
    assert _update(local, trainer)["weight_version"] == 1.0
    for url in urls:
        calls = _control(url)
        paths = [c["_path"] for c in calls]
        assert paths == ["/pause?mode=wait", "/v1/load_lora_adapter", *AFTER, "/resume"]
        load = calls[1]
        assert (load["lora_name"], load["load_inplace"]) == ("adapter", True)
        folder = Path(load["lora_path"])
        assert (folder / "adapter_config.json").is_file()
        assert not (folder / "model.safetensors").exists()  # the adapter, not the model
    after = policy.sample([CONVERSATION], PARAMS)[0]
    asked = [c["model"] for url in urls for c in _requests(url) if "model" in c]
    assert sorted(asked) == ["adapter", "fake"] and after.weight_version == 1
    assert after.completion_ids != before.completion_ids  # the adapter's bytes seed the fake
    _update(local, trainer)
    again = policy.sample([CONVERSATION], PARAMS)[0]
    assert again.completion_ids != after.completion_ids  # replaced in place: new bytes
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["v000001", "v000002"]


def test_lora_reloads_the_adapter_into_a_restarted_server(lora_run, fake_vllm) -> None:
    urls, local, policy, trainer = lora_run
    _update(local, trainer)
    _restart(fake_vllm, urls[1], "--served-model-name", "fake")
    out = policy.sample([CONVERSATION] * 4, PARAMS)  # the restarted server must know "adapter"
    assert all(c.weight_version == 1 for c in out)
    paths = [c["_path"] for c in _control(urls[1])]
    assert paths == ["/pause?mode=wait", "/v1/load_lora_adapter", *AFTER, "/resume"]


def test_a_server_without_runtime_lora_fails_the_push_and_is_resumed(
    fake_vllm, make_local, tmp_path
) -> None:
    pytest.importorskip("peft")
    from spade.backends.openai_compat import OpenAICompatError
    from spade.backends.torch_setup import LoraSettings

    url = fake_vllm.start("--no-lora")
    local = make_local(lora=LoraSettings(r=4))
    policy = _policy([url], local)
    trainer = SyncedTrainer(local, VLLMWeightSync(policy, tmp_path / "w", transfer="lora"))
    with pytest.raises(OpenAICompatError, match="HTTP 404"):
        _update(local, trainer)
    paths = [c["_path"] for c in _control(url)]
    assert paths == ["/pause?mode=wait", "/v1/load_lora_adapter", "/resume"]
    assert policy.weight_version == 0 and policy.served_model == "fake"


def test_lora_sync_needs_a_lora_trainer(fake_vllm, make_local, tmp_path) -> None:
    local = make_local()
    policy = _policy([fake_vllm.start()], local)
    with pytest.raises(ValueError, match="--lora-rank"):
        SyncedTrainer(local, VLLMWeightSync(policy, tmp_path / "w", transfer="lora"))
    with pytest.raises(ValueError, match="export_adapter"):
        local.export_adapter(tmp_path / "a")
    with pytest.raises(ValueError, match="unknown weight transfer"):
        VLLMWeightSync(policy, tmp_path / "w", transfer="rsync")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------- nccl
class FakeNCCLEngine:
    """The control plane of vLLM's `NCCLTrainerWeightTransferEngine` (vllm 0.32.0,
    nccl_engine.py): `trainer_init` sends the worker-side init info (rank_offset 1, the group
    size, packed) and `send_weights` sends start / the parameters' metadata / finish. The NCCL
    broadcast between them needs GPUs; here each call only records what it would send."""

    built: ClassVar[list[FakeNCCLEngine]] = []

    def __init__(self, init: dict, client, model) -> None:
        self.init, self.client, self.model, self.closed = init, client, model, False
        worker = {k: init[k] for k in ("master_address", "master_port", "world_size")}
        client.init_weight_transfer_engine({**worker, "rank_offset": 1, "packed": True})
        FakeNCCLEngine.built.append(self)

    def send_weights(self) -> None:
        params = list(self.model.named_parameters())
        self.client.start_weight_update()
        self.client.update_weights(
            {
                "names": [n for n, _ in params],
                "dtype_names": [str(p.dtype).split(".")[-1] for _, p in params],
                "shapes": [list(p.shape) for _, p in params],
            }
        )
        self.client.finish_weight_update()

    def shutdown(self) -> None:
        self.closed = True


@pytest.fixture
def nccl_run(fake_vllm, make_local, tmp_path, untied_tiny):
    FakeNCCLEngine.built = []
    urls = [fake_vllm.start("--world-size", "2"), fake_vllm.start("--world-size", "4")]
    local = make_local(model=untied_tiny)
    policy = _policy(urls, local)
    sync = VLLMWeightSync(
        policy,
        tmp_path / "weights",
        transfer="nccl",
        nccl_address="10.0.0.7",
        nccl_port=31000,
        nccl_engine=FakeNCCLEngine,
    )
    return urls, local, policy, SyncedTrainer(local, sync)


SEND = ["/start_weight_update", "/update_weights", "/finish_weight_update"]


def test_nccl_rendezvous_once_per_server_then_sends_every_update(nccl_run, tmp_path) -> None:
    urls, local, policy, trainer = nccl_run
    before = policy.sample([CONVERSATION], PARAMS)[0]
    _update(local, trainer)
    for i, (url, workers) in enumerate(zip(urls, (2, 4))):
        calls = _control(url)
        paths = [c["_path"] for c in calls]
        first = ["/get_world_size", "/init_weight_transfer_engine", *SEND]
        assert paths == ["/pause?mode=wait", *first, *AFTER, "/resume"]
        init = calls[2]["init_info"]
        assert init["master_address"] == "10.0.0.7" and init["master_port"] == 31000 + i
        assert (init["world_size"], init["rank_offset"]) == (workers + 1, 1)
        names = calls[4]["update_info"]["names"]
        assert names == [n for n, _ in local.model.named_parameters()]
        assert "lm_head.weight" in names  # the untied head travels too
    assert not (tmp_path / "weights").exists()  # nothing written to disk
    after = policy.sample([CONVERSATION], PARAMS)[0]
    assert (after.weight_version, after.completion_ids != before.completion_ids) == (1, True)
    _update(local, trainer)
    paths = [c["_path"] for c in _control(urls[0])][9:]
    assert paths == ["/pause?mode=wait", *SEND, *AFTER, "/resume"]  # no second rendezvous
    assert len(FakeNCCLEngine.built) == 2
    trainer.close()
    assert all(e.closed for e in FakeNCCLEngine.built)


def test_nccl_rendezvous_again_with_a_restarted_server(nccl_run, fake_vllm) -> None:
    urls, local, policy, trainer = nccl_run
    _update(local, trainer)
    _restart(fake_vllm, urls[0], "--world-size", "2")  # its transfer engine is gone
    out = policy.sample([CONVERSATION] * 4, PARAMS)
    assert all(c.weight_version == 1 for c in out)
    paths = [c["_path"] for c in _control(urls[0])]
    init = ["/get_world_size", "/init_weight_transfer_engine", *SEND]
    assert paths == ["/pause?mode=wait", *init, *AFTER, "/resume"]
    assert FakeNCCLEngine.built[0].closed and len(FakeNCCLEngine.built) == 3
    _restart(fake_vllm, urls[1], "--world-size", "4")  # restarted between two updates
    policy.version_check = None  # no sampling in between: the push itself must notice
    _update(local, trainer)
    paths = [c["_path"] for c in _control(urls[1])]
    assert paths == ["/pause?mode=wait", *init, *AFTER, "/resume"]


def test_a_failed_nccl_round_rendezvous_afresh_next_time(nccl_run) -> None:
    from spade.backends.openai_compat import OpenAICompatError

    urls, local, policy, trainer = nccl_run
    _update(local, trainer)
    engine = FakeNCCLEngine.built[0]
    engine.client.root = engine.client.root + "/gone"  # its next round fails
    with pytest.raises(OpenAICompatError, match="HTTP 404"):
        _update(local, trainer)
    assert engine.closed and policy.weight_version == 1
    assert [c["_path"] for c in _control(urls[0])][-1] == "/resume"  # left running
    _update(local, trainer)
    assert len(FakeNCCLEngine.built) == 3 and policy.weight_version == 2  # a new rendezvous


def test_nccl_refuses_tied_and_lora_models(fake_vllm, make_local, tmp_path, untied_tiny) -> None:
    local = make_local()  # tiny-test ties its embeddings
    policy = _policy([fake_vllm.start()], local)
    sync = VLLMWeightSync(policy, tmp_path / "w", transfer="nccl", nccl_engine=FakeNCCLEngine)
    with pytest.raises(ValueError, match="spade untie"):
        SyncedTrainer(local, sync)
    pytest.importorskip("peft")
    from spade.backends.torch_setup import LoraSettings

    with pytest.raises(ValueError, match="--vllm-sync lora"):
        SyncedTrainer(make_local(model=untied_tiny, lora=LoraSettings(r=4)), sync)


def test_the_nccl_transfer_without_vllm_says_what_to_install(make_local) -> None:
    try:
        import vllm  # noqa: F401

        pytest.skip("vllm is installed here: its engine would really open an NCCL group")
    except ImportError:
        pass
    from spade.backends.weight_sync import ControlClient, _vllm_nccl_engine

    client = ControlClient("http://127.0.0.1:9", VLLMConfig(("x",), "m", "t"), None)
    with pytest.raises(ImportError, match="install vllm"):
        _vllm_nccl_engine({}, client, make_local().model)


# ----------------------------------------------------------------------------------- untie
@pytest.fixture
def untied_tiny(make_local, tmp_path_factory) -> str:
    from spade.backends.tiny import tiny_model_path
    from spade.backends.torch_setup import untie_embeddings

    make_local()  # tiny-test in the cache
    return str(untie_embeddings(tiny_model_path("tiny-test"), tmp_path_factory.mktemp("u")))


def test_an_untied_copy_passes_the_strict_sync_and_exports_its_head(
    untied_tiny, make_local, fake_vllm, tmp_path
) -> None:
    import torch
    from safetensors.torch import load_file

    untied = make_local(model=untied_tiny)  # the copy itself: test_torch_setup.py
    policy = _policy([fake_vllm.start()], untied)
    trainer = SyncedTrainer(untied, VLLMWeightSync(policy, tmp_path / "w"))  # strict: accepted
    _update(untied, trainer)
    exported = load_file(str(tmp_path / "w" / "v000001" / "model.safetensors"))
    assert torch.equal(exported["lm_head.weight"], untied.model.lm_head.weight.detach())


def test_spade_untie_writes_the_copy_once(make_local, tmp_path, capsys) -> None:
    from spade.cli.main import main

    make_local()
    out = tmp_path / "copy"
    assert main(["untie", "--model", "tiny-test", "--out", str(out)]) == 0
    assert json.loads((out / "config.json").read_text())["tie_word_embeddings"] is False
    assert main(["untie", "--model", "tiny-test", "--out", str(out)]) == 0
    assert "exists" in capsys.readouterr().out
    assert main(["untie", "--model", str(out), "--out", str(tmp_path / "x")]) == 2


def test_spade_train_refuses_a_sync_that_cannot_work_before_it_starts(
    fake_vllm, make_local, tmp_path, capsys
) -> None:
    from spade.cli.main import main

    make_local()
    url = fake_vllm.start()
    run = tmp_path / "run"
    argv = ["train", "--model", "tiny-test", "--vllm-urls", url, "--run-dir", str(run)]
    assert main(argv) == 2  # tiny-test ties its embeddings
    assert "spade untie" in capsys.readouterr().out
    assert main([*argv, "--vllm-sync", "lora"]) == 2  # LoRA sync without LoRA
    assert "--lora-rank" in capsys.readouterr().out
    assert not (run / "state.json").exists()
    assert [c for c in _requests(url) if c["_path"] == "/v1/completions"] == []
