"""Weight sync into vLLM servers after each update, against fake vLLM servers over real HTTP:
the calls and their order, the version on every later completion, restarted servers brought back
up to date, failures that leave no server paused, and a load that pushes what it restored."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from spade.backends import SamplingParams, episode_sample
from spade.backends.openai_compat import OpenAICompatError
from spade.backends.vllm import VLLMConfig, VLLMPolicy
from spade.backends.weight_sync import SyncedTrainer, VLLMWeightSync

CONVERSATION = [{"role": "user", "content": "Guess my number. Answer \\boxed{n}."}]
PARAMS = SamplingParams(max_tokens=4, seed=9)
CONTROL = ["/pause?mode=wait", "/collective_rpc", "/update_weight_version", "/reset_prefix_cache"]


def _calls(url: str) -> list[dict]:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/requests") as r:
        return [c for c in json.loads(r.read()) if not c["_path"].startswith("/v1/")]


def _setup(fake_vllm, make_local, tmp_path: Path, *second_server_args: str):
    urls = [fake_vllm.start(), fake_vllm.start(*second_server_args)]
    local = make_local()
    config = VLLMConfig(
        tuple(urls), model="fake", tokenizer="t", backoff_s=0.01, max_retries=1, version_check_s=0
    )
    policy = VLLMPolicy(config, tokenizer=local.tokenizer)
    # tiny-test ties its embeddings; the fake servers have no LM head to leave stale
    sync = VLLMWeightSync(policy, tmp_path / "weights", allow_tied_embeddings=True)
    return urls, local, policy, SyncedTrainer(local, sync)


def _update(local, trainer) -> dict:
    completion = local.sample([CONVERSATION], PARAMS)[0]
    return trainer.update([episode_sample([completion], advantage=1.0, role="agent")])


def test_each_update_is_pushed_into_every_server(fake_vllm, make_local, tmp_path) -> None:
    urls, local, policy, trainer = _setup(fake_vllm, make_local, tmp_path)
    before = policy.sample([CONVERSATION], PARAMS)[0]
    metrics = _update(local, trainer)
    assert metrics["weight_version"] == 1.0 and metrics["step"] == 1.0
    for url in urls:
        calls = _calls(url)
        assert [c["_path"] for c in calls] == [*CONTROL, "/resume"]
        rpc = calls[1]
        assert rpc["method"] == "reload_weights"
        folder = Path(rpc["kwargs"]["weights_path"])
        assert (folder / "config.json").is_file() and list(folder.glob("*.safetensors"))
        assert calls[2]["new_version"] == "1"
    after = policy.sample([CONVERSATION], PARAMS)[0]
    assert (before.weight_version, after.weight_version) == (0, 1)
    assert after.completion_ids != before.completion_ids  # the servers sample the new weights
    for _ in range(2):
        _update(local, trainer)
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["v000002", "v000003"]


def test_a_restarted_server_gets_the_latest_weights_before_it_samples(
    fake_vllm, make_local, tmp_path
) -> None:
    urls, local, policy, trainer = _setup(fake_vllm, make_local, tmp_path)
    _update(local, trainer)
    port = int(urls[1].rsplit(":", 1)[1].split("/")[0])
    fake_vllm.stop(urls[1])
    assert fake_vllm.start(port=port) == urls[1]  # back, with its launch weights
    assert policy.server_version(urls[1]) is None
    out = policy.sample([CONVERSATION] * 4, PARAMS)
    assert all(c.weight_version == 1 for c in out)
    calls = _calls(urls[1])
    assert [c["_path"] for c in calls] == [*CONTROL, "/resume"]
    assert calls[1]["kwargs"]["weights_path"].endswith("v000001")
    assert policy.server_version(urls[1]) == 1
    assert len(_calls(urls[0])) == 5  # the other server was left alone


def test_a_failed_push_leaves_no_server_paused(fake_vllm, make_local, tmp_path) -> None:
    urls, local, policy, trainer = _setup(fake_vllm, make_local, tmp_path, "--no-dev")
    # the second server has no dev-mode endpoints: its pause fails after the first one paused
    with pytest.raises(OpenAICompatError, match="HTTP 404") as caught:
        _update(local, trainer)
    assert urls[1].removesuffix("/v1") in str(caught.value)  # names the server at fault
    assert [c["_path"] for c in _calls(urls[0])] == ["/pause?mode=wait", "/resume"]
    assert policy.weight_version == 0


def test_load_pushes_the_restored_weights(fake_vllm, make_local, tmp_path) -> None:
    urls, local, policy, trainer = _setup(fake_vllm, make_local, tmp_path)
    _update(local, trainer)
    trainer.save(tmp_path / "ckpt")
    trainer.load(tmp_path / "ckpt")
    assert policy.weight_version == 2
    assert [c["new_version"] for c in _calls(urls[0]) if "new_version" in c] == ["1", "2"]
    with pytest.raises(TypeError, match="cannot export"):
        SyncedTrainer(object(), trainer.sync)
    with pytest.raises(ValueError, match="ties its input and output embeddings"):
        SyncedTrainer(local, VLLMWeightSync(policy, tmp_path / "w2"))  # refused up front


def test_spade_train_samples_through_vllm_servers(fake_vllm, make_local, tmp_path) -> None:
    from spade.backends.tiny import tiny_model_path
    from spade.backends.torch_setup import untie_embeddings
    from spade.cli.main import main

    make_local()  # tiny-test in the cache
    model = untie_embeddings(tiny_model_path("tiny-test"), tmp_path / "untied")
    url = fake_vllm.start()
    run = tmp_path / "run"
    argv = ["train", "--model", str(model), "--vllm-urls", url, "--iterations", "1"]
    argv += ["--run-dir", str(run), "--no-heldout-eval", "--eval-suites"]
    assert main(argv) == 0
    with urllib.request.urlopen(url.removesuffix("/v1") + "/requests") as r:
        sent = json.loads(r.read())
    completions = [c for c in sent if c["_path"] == "/v1/completions"]
    assert completions and all(isinstance(c["prompt"][0], int) for c in completions)
    assert json.loads((run / "state.json").read_text())["iteration"] == 1
