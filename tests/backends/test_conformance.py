"""One conformance suite over every available Policy and Trainer backend.

Policies: the local backend on the ~1M-parameter tiny-test model, the OpenAI-compatible client
against the fake server (with vLLM-style token ids, so its completions are trainable), and
VLLMPolicy (token-in) against the fake vLLM server with the tiny-test tokenizer.
Trainers: the local backend (and its LoRA variant when peft is installed).
"""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch")

from spade.backends import Policy, Prompt, SamplingParams, Trainer, episode_sample

CONVERSATIONS = [
    [{"role": "user", "content": "Guess a number between 1 and 10. Answer \\boxed{n}."}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Push the box left."}],
    [{"role": "user", "content": "x"}],
]


@pytest.fixture(params=["local", "openai", "vllm"])
def policy(request, make_local, fake_server, fake_vllm, tiny_tokenizer):
    if request.param == "local":
        return make_local()
    if request.param == "vllm":
        from spade.backends.vllm import VLLMConfig, VLLMPolicy

        config = VLLMConfig((fake_vllm.start(), fake_vllm.start()), model="fake", tokenizer="t")
        return VLLMPolicy(config, tokenizer=tiny_tokenizer)
    from spade.backends.openai_compat import OpenAICompatConfig, OpenAICompatPolicy

    return OpenAICompatPolicy(
        OpenAICompatConfig(
            base_url=fake_server(), model="fake", api_key_env=None, request_token_ids=True
        )
    )


def test_policy_satisfies_protocol(policy):
    assert isinstance(policy, Policy)


def test_completions_are_aligned(policy):
    params = SamplingParams(max_tokens=12, seed=3)
    completions = policy.sample(CONVERSATIONS, params)
    assert len(completions) == len(CONVERSATIONS)
    for c in completions:
        assert c.trainable, c.untrainable_reason
        assert 0 < len(c.completion_ids) <= params.max_tokens
        assert len(c.logprobs) == len(c.completion_ids)
        assert all(math.isfinite(x) and x <= 0.0 for x in c.logprobs)
        assert len(c.prompt_ids) > 0
        assert c.finish_reason in ("stop", "length")
        if c.finish_reason == "length":
            assert len(c.completion_ids) == params.max_tokens


def test_sampling_is_deterministic_given_the_seed(policy):
    params = SamplingParams(max_tokens=10, seed=11, temperature=1.0)
    assert policy.sample(CONVERSATIONS, params) == policy.sample(CONVERSATIONS, params)


def test_multi_turn_extension_keeps_generated_tokens(policy):
    params = SamplingParams(max_tokens=8, seed=5)
    first = Prompt.of(CONVERSATIONS[0])
    c1 = policy.sample([first], params)[0]
    second = policy.extend(first, c1, [{"role": "user", "content": "Too low."}])
    assert second.messages[-2] == {"role": "assistant", "content": c1.text}
    assert second.messages[-1]["content"] == "Too low."
    c2 = policy.sample([second], params)[0]
    if second.token_ids is not None:  # token-in/token-out backends
        assert (
            second.token_ids[: len(c1.prompt_ids) + len(c1.completion_ids)]
            == c1.prompt_ids + c1.completion_ids
        )
        sample = episode_sample([c1, c2], advantage=1.0, role="agent")
        assert sample.num_trained_tokens == len(c1.completion_ids) + len(c2.completion_ids)


@pytest.fixture(params=["local", "local-lora"])
def trainer(request, make_local):
    if request.param == "local-lora":
        pytest.importorskip("peft")
        from spade.backends.torch_setup import LoraSettings

        return make_local(lora=LoraSettings(r=4, alpha=8), learning_rate=1e-2)
    return make_local()


def _episode(backend, seed=1, advantage=1.0):
    c = backend.sample(CONVERSATIONS[:1], SamplingParams(max_tokens=16, seed=seed))[0]
    return episode_sample([c], advantage=advantage, role="agent")


def _trained_logprob(backend, sample):
    return sum(lp for lp, m in zip(backend.score([sample])[0], sample.loss_mask) if m)


def test_trainer_satisfies_protocol(trainer):
    assert isinstance(trainer, Trainer)


@pytest.mark.parametrize("advantage", [1.0, -1.0])
def test_update_moves_logprob_in_the_direction_of_the_advantage(trainer, advantage):
    sample = _episode(trainer, advantage=advantage)
    before = _trained_logprob(trainer, sample)
    metrics = trainer.update([sample])
    after = _trained_logprob(trainer, sample)
    assert (after - before) * advantage > 0
    assert metrics["ratio"] == pytest.approx(1.0, abs=1e-4)  # on-policy: behaviour == current
    assert metrics["trained_tokens"] == sample.num_trained_tokens


def test_save_load_round_trips_exactly(trainer, make_local, tmp_path):
    import torch

    s1, s2 = _episode(trainer, seed=1), _episode(trainer, seed=2, advantage=-0.5)
    trainer.update([s1])
    trainer.save(tmp_path / "ckpt")
    trainer.update([s2])
    expected = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    expected_next = trainer.sample(
        CONVERSATIONS, SamplingParams(max_tokens=8)
    )  # unseeded: backend RNG

    # Same folder: a preset name could resolve to a rebuilt tokenizer if the shipped text changed.
    other = make_local(
        seed=123,
        model=trainer.model_path,
        lora=trainer.config.lora,
        learning_rate=trainer.config.ppo.learning_rate,
    )
    other.load(tmp_path / "ckpt")
    assert other.step == 1
    other.update([s2])
    for n, p in other.model.named_parameters():
        assert torch.equal(p, expected[n]), n
    assert other.sample(CONVERSATIONS, SamplingParams(max_tokens=8)) == expected_next
