"""OpenAICompatPolicy against the fake server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from spade.backends import SamplingParams, episode_sample
from spade.backends.openai_compat import OpenAICompatConfig, OpenAICompatError, OpenAICompatPolicy

CONV = [{"role": "user", "content": "hello there"}]


def make(url, **kw):
    kw.setdefault("api_key_env", None)
    kw.setdefault("backoff_s", 0.01)
    return OpenAICompatPolicy(OpenAICompatConfig(base_url=url, model="fake", **kw))


def stats(url):
    with urllib.request.urlopen(url.rsplit("/v1", 1)[0] + "/v1/stats", timeout=5) as r:
        return json.loads(r.read())


def test_plain_server_gives_text_and_logprobs_but_is_not_trainable(fake_server):
    url = fake_server()
    c = make(url).sample([CONV], SamplingParams(max_tokens=100))[0]
    assert c.text == "echo: hello there" and c.finish_reason == "stop"
    assert c.logprobs is not None and len(c.logprobs) == len(c.text)
    assert c.completion_ids is None and not c.trainable
    assert (
        "not for training" in c.untrainable_reason and "request_token_ids" in c.untrainable_reason
    )
    with pytest.raises(ValueError, match="not for training"):
        episode_sample([c], 1.0, "designer")


def test_server_without_logprobs_says_so(fake_server):
    c = make(fake_server("--no-logprobs")).sample([CONV], SamplingParams())[0]
    assert c.logprobs is None and "logprobs" in c.untrainable_reason


def test_vllm_token_ids_make_completions_trainable(fake_server):
    c = make(fake_server(), request_token_ids=True).sample([CONV], SamplingParams())[0]
    assert c.trainable
    assert c.completion_ids == tuple(ord(ch) for ch in c.text)
    assert c.prompt_ids == tuple(ord(ch) for ch in "hello there")
    assert c.temperature == 1.0  # vLLM's default logprobs are raw
    s = episode_sample([c], 1.0, "agent")
    assert s.num_trained_tokens == len(c.text)


def test_max_tokens_stop_and_seed_are_forwarded(fake_server):
    url = fake_server()
    policy = make(url)
    cut = policy.sample([CONV], SamplingParams(max_tokens=4))[0]
    assert (cut.text, cut.finish_reason) == ("echo", "length")
    stopped = policy.sample([CONV], SamplingParams(stop=("there",)))[0]
    assert (stopped.text, stopped.finish_reason) == ("echo: hello ", "stop")
    policy.sample([CONV, CONV, CONV], SamplingParams(seed=7))
    seeds = stats(url)["seeds"][-3:]
    assert len(set(seeds)) == 3 and all(isinstance(s, int) for s in seeds)


def test_concurrency_is_capped(fake_server):
    url = fake_server("--delay-s", "0.15")
    start = time.monotonic()
    out = make(url, max_concurrency=3).sample([CONV] * 9, SamplingParams())
    elapsed = time.monotonic() - start
    assert len(out) == 9
    # never more than the cap; overlapping at all (exactly 3 is not guaranteed on a loaded host)
    assert 1 < stats(url)["max_in_flight"] <= 3
    assert elapsed >= 0.4  # 9 requests / 3 at a time x 0.15 s


@pytest.mark.parametrize("status", ["503", "429"])
def test_transient_errors_are_retried(fake_server, status):
    url = fake_server("--fail-first", "2", "--fail-status", status)
    c = make(url, max_retries=3).sample([CONV], SamplingParams())[0]
    assert c.text == "echo: hello there"
    assert stats(url)["requests"] == 3


def test_retries_run_out_with_the_last_error(fake_server):
    url = fake_server("--fail-first", "10")
    with pytest.raises(OpenAICompatError, match=r"gave up after 2 attempts.*503.*overloaded"):
        make(url, max_retries=1).sample([CONV], SamplingParams())


def test_client_errors_are_not_retried(fake_server):
    url = fake_server("--bad-request-model", "fake")
    with pytest.raises(OpenAICompatError, match=r"400.*does not exist") as e:
        make(url, max_retries=3).sample([CONV], SamplingParams())
    assert e.value.status == 400
    assert stats(url)["requests"] == 1


def test_timeouts_fail_fast(fake_server):
    url = fake_server("--delay-s", "3")
    start = time.monotonic()
    with pytest.raises(OpenAICompatError, match="gave up"):
        make(url, timeout_s=0.2, max_retries=1).sample([CONV], SamplingParams())
    assert time.monotonic() - start < 2.0


def test_api_key_is_sent_from_the_environment_and_never_shown(fake_server, monkeypatch):
    secret = "sk-test-do-not-print-4711"
    url = fake_server("--require-key", secret)
    monkeypatch.setenv("SPADE_TEST_KEY", secret)
    policy = make(url, api_key_env="SPADE_TEST_KEY")
    assert policy.sample([CONV], SamplingParams())[0].text == "echo: hello there"
    assert (
        secret not in repr(policy)
        and secret not in repr(policy.config)
        and secret not in str(vars(policy))
    )
    monkeypatch.setenv("SPADE_TEST_KEY", "sk-wrong-key-0000")
    with pytest.raises(OpenAICompatError) as e:
        policy.sample([CONV], SamplingParams())
    assert e.value.status == 401 and "sk-wrong" not in str(e.value)


def test_unreachable_server_is_reported():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(OpenAICompatError, match="gave up after 1 attempts"):
        make(f"http://127.0.0.1:{port}/v1", max_retries=0).sample([CONV], SamplingParams())


# --- replies that break the protocol (issue 16) --------------------------------------------------


def test_a_200_that_is_not_json_is_an_error_not_a_retry(fake_server):
    url = fake_server("--reply", "not-json")
    with pytest.raises(OpenAICompatError, match=r"reply is not JSON: '<html>502 Bad Gateway"):
        make(url, max_retries=3).sample([CONV], SamplingParams())
    assert stats(url)["requests"] == 1


def test_a_reply_without_choices_is_malformed(fake_server):
    with pytest.raises(OpenAICompatError, match=r"malformed reply: .*chat.completion"):
        make(fake_server("--reply", "malformed")).sample([CONV], SamplingParams())


def test_misaligned_token_ids_and_logprobs_make_the_completion_untrainable(fake_server):
    c = make(fake_server("--reply", "misaligned"), request_token_ids=True).sample(
        [CONV], SamplingParams()
    )[0]
    assert c.text == "echo: hello there" and c.logprobs is None
    assert not c.trainable and "aligned logprobs" in c.untrainable_reason
    with pytest.raises(ValueError, match="aligned logprobs"):
        episode_sample([c], 1.0, "agent")


def test_a_logprob_entry_without_its_logprob_is_an_openai_error(fake_server):
    # it used to escape as a bare KeyError('logprob')
    with pytest.raises(OpenAICompatError, match="malformed logprobs"):
        make(fake_server("--reply", "no-logprob")).sample([CONV], SamplingParams())


@pytest.mark.parametrize(
    ("server", "ours"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("tool_calls", "tool_calls"),
        ("function_call", "tool_calls"),
    ],
)
def test_finish_reasons_are_kept(fake_server, server, ours):
    c = make(fake_server("--finish", server)).sample([CONV], SamplingParams())[0]
    assert c.finish_reason == ours


def test_an_unknown_finish_reason_is_an_error(fake_server):
    with pytest.raises(OpenAICompatError, match="unknown finish_reason 'eaten_by_grue'"):
        make(fake_server("--finish", "eaten_by_grue")).sample([CONV], SamplingParams())


def test_retry_after_is_honoured(fake_server):
    # backoff alone would wait ~0.01 s per retry; Retry-After asks for 0.4 s, twice
    url = fake_server("--fail-first", "2", "--fail-status", "429", "--retry-after", "0.4")
    start = time.monotonic()
    c = make(url, max_retries=3, backoff_s=0.01).sample([CONV], SamplingParams())[0]
    assert c.text == "echo: hello there" and stats(url)["requests"] == 3
    assert time.monotonic() - start >= 0.8


def test_retry_after_is_capped_by_max_backoff(fake_server):
    url = fake_server("--fail-first", "1", "--fail-status", "503", "--retry-after", "60")
    start = time.monotonic()
    make(url, max_retries=1, max_backoff_s=0.2).sample([CONV], SamplingParams())
    assert time.monotonic() - start < 5.0
