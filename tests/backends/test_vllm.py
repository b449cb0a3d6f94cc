"""VLLMPolicy against fake vLLM servers over real HTTP: token-in requests checked field by field,
token-out multi-turn extension, conversations pinned to a server, refusals, and failures."""

from __future__ import annotations

import json
import urllib.request

import pytest

from spade.backends import chat
from spade.backends.base import Prompt, SamplingParams
from spade.backends.openai_compat import OpenAICompatError
from spade.backends.sampling import row_seeds
from spade.backends.vllm import VLLMConfig, VLLMPolicy

CONVERSATIONS = [
    [{"role": "user", "content": f"Guess my number, round {i}. Answer \\boxed{{n}}."}]
    for i in range(6)
]


def _policy(tokenizer, *urls: str, **kw) -> VLLMPolicy:
    config = VLLMConfig(tuple(urls), model="served", tokenizer="tiny", backoff_s=0.01, **kw)
    return VLLMPolicy(config, tokenizer=tokenizer)


def _requests(url: str) -> list[dict]:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/requests") as r:
        return json.loads(r.read())


def test_requests_are_token_ids_with_vllms_fields(fake_vllm, tiny_tokenizer) -> None:
    url = fake_vllm.start()
    policy = _policy(tiny_tokenizer, url)
    params = SamplingParams(max_tokens=4, temperature=0.7, seed=5, stop=("STOP",))
    out = policy.sample(CONVERSATIONS[:3], params)
    sent = {tuple(b["prompt"]): b for b in _requests(url)}  # requests run concurrently
    seeds = row_seeds(5, 3)
    for i, completion in enumerate(out):
        ids = chat.prompt_ids(tiny_tokenizer, CONVERSATIONS[i])
        body = sent[tuple(ids)]
        assert body["model"] == "served"
        assert body["seed"] == seeds[i] % 2**31  # each prompt's own stream, as locally
        assert (body["logprobs"], body["return_token_ids"], body["top_p"]) == (0, True, 1.0)
        assert body["stop"] == ["STOP"] and body["include_stop_str_in_output"] is True
        assert body["stop_token_ids"] == sorted(policy.eot_ids)
        assert body["max_tokens"] == 4 and body["temperature"] == 0.7
        assert completion.prompt_ids == tuple(ids)
        assert completion.completion_ids is not None and len(completion.completion_ids) == 4
        assert completion.logprobs == pytest.approx((-0.1, -0.2, -0.3, -0.4))
        assert completion.finish_reason == "length" and completion.trainable
        assert completion.temperature == 0.7  # processed logprobs: at the temperature
        assert completion.weight_version == 0
    policy.weight_version = 3
    assert policy.sample(CONVERSATIONS[:1], params)[0].weight_version == 3
    raw = _policy(tiny_tokenizer, url, logprobs_at_temperature=False)
    assert raw.sample(CONVERSATIONS[:1], params)[0].temperature == 1.0


def test_turns_extend_token_ids_and_stay_on_their_server(fake_vllm, tiny_tokenizer) -> None:
    urls = [fake_vllm.start(), fake_vllm.start()]
    policy = _policy(tiny_tokenizer, *urls)
    params = SamplingParams(max_tokens=8, seed=1)  # 6 ids, then the end-of-turn id: "stop"
    prompts = [Prompt.of(c) for c in CONVERSATIONS]
    first = policy.sample(prompts, params)
    assert all(c.finish_reason == "stop" for c in first)
    note = [{"role": "user", "content": "Higher."}]
    nexts = [policy.extend(p, c, note) for p, c in zip(prompts, first)]
    second = policy.sample(nexts, params)
    for c, n, s in zip(first, nexts, second):
        assert c.prompt_ids is not None and c.completion_ids is not None
        delta = chat.turn_delta_ids(tiny_tokenizer, c.completion_ids, note, policy.eot_ids)
        assert n.token_ids == c.prompt_ids + c.completion_ids + tuple(delta)
        assert s.prompt_ids == n.token_ids  # sent as ids, never re-rendered
    by_server = {u: [tuple(b["prompt"]) for b in _requests(u)] for u in urls}
    assert all(by_server.values()), "both servers got conversations"
    for c, s in zip(first, second):  # a conversation's second turn went where its first did
        (home,) = [u for u, sent in by_server.items() if c.prompt_ids in sent]
        assert s.prompt_ids in by_server[home]


def test_truncated_sampling_is_refused(fake_vllm, tiny_tokenizer) -> None:
    policy = _policy(tiny_tokenizer, fake_vllm.start())
    for params in (SamplingParams(max_tokens=4, top_p=0.9), SamplingParams(max_tokens=4, top_k=5)):
        with pytest.raises(ValueError, match="top_p=1 and top_k=0"):
            policy.sample(CONVERSATIONS[:1], params)
    with pytest.raises(ValueError, match="at least one server"):
        VLLMConfig((), model="m", tokenizer="t")


@pytest.mark.parametrize(
    "mode, message",
    [
        ("no-ids", "without token ids"),
        ("misaligned", "token ids but"),
        ("retokenized", "prompt token ids differ"),
    ],
)
def test_broken_replies_name_the_server(fake_vllm, tiny_tokenizer, mode, message) -> None:
    url = fake_vllm.start("--reply", mode)
    with pytest.raises(OpenAICompatError, match=message) as caught:
        _policy(tiny_tokenizer, url).sample(CONVERSATIONS[:1], SamplingParams(max_tokens=3))
    assert url in str(caught.value)


def test_errors_are_retried_and_a_restarted_server_is_found_again(fake_vllm, tiny_tokenizer):
    url = fake_vllm.start("--fail-first", "2")  # 503 twice, as an engine still loading
    policy = _policy(tiny_tokenizer, url)
    params = SamplingParams(max_tokens=3, seed=2)
    before = policy.sample(CONVERSATIONS[:1], params)
    assert len(_requests(url)) == 3
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    fake_vllm.stop(url)
    with pytest.raises(OpenAICompatError, match="gave up after 2 attempts"):
        _policy(tiny_tokenizer, url, max_retries=1).sample(CONVERSATIONS[:1], params)
    assert fake_vllm.start(port=port) == url  # the server comes back on its address
    after = policy.sample(CONVERSATIONS[:1], params)
    assert after[0].completion_ids == before[0].completion_ids  # same seed, same stream
    bad = fake_vllm.start()
    with pytest.raises(OpenAICompatError, match="HTTP 400"):  # what a real server refuses
        policy._post(bad, {"prompt": "text, not ids", "logprobs": 0, "return_token_ids": True})


SHORT_ENV = """
class ShortEnv:
    def __init__(self, max_turns=3):
        self.max_turns = max_turns
    def reset(self, seed=None):
        return "Go.", {}
    def step(self, action):
        return "Again.", 0.0, False, False, {}
"""
LONG_ENV = SHORT_ENV.replace("ShortEnv", "LongEnv").replace('"Go."', '"word " * 300')


@pytest.mark.parametrize("concurrent", [True, False])
def test_episodes_do_not_wait_in_lock_step_on_a_concurrent_policy(
    fake_vllm, tiny_tokenizer, concurrent
) -> None:
    import asyncio

    from spade.sandbox import Sandbox, SandboxConfig
    from spade.selfplay.rollout import PlayRequest, play
    from spade.types import Program

    url = fake_vllm.start("--slow-above", "200", "--slow-s", "1.5")  # the long episode is slow
    policy = _policy(tiny_tokenizer, url)
    policy.concurrent = concurrent  # False: the batched, turn-synchronous path
    requests = [PlayRequest(Program.from_code(c), seed=0) for c in (SHORT_ENV, LONG_ENV)]

    async def run():
        async with Sandbox(SandboxConfig(warm_workers=2)) as sandbox:
            return await play(
                policy, sandbox, requests, params=SamplingParams(max_tokens=4, seed=3), max_turns=3
            )

    rollouts = asyncio.run(run())
    assert [len(r.episode.turns) for r in rollouts] == [3, 3]
    sent = [b for b in _requests(url) if b["_path"] == "/v1/completions"]
    slow = [b["_t"] for b in sent if len(b["prompt"]) > 200]
    fast = [b["_t"] for b in sent if len(b["prompt"]) <= 200]
    assert len(slow) == len(fast) == 3
    if concurrent:  # the short episode played all 3 turns while the long one's first reply waited
        assert fast[2] < slow[0] + 1.5
    else:  # each turn waited for the slow reply
        assert fast[1] > slow[0] + 1.5
