"""A Policy over any OpenAI-compatible chat-completions server (vLLM, SGLang, llama.cpp, OpenAI...).

    config = OpenAICompatConfig(base_url="http://127.0.0.1:8000/v1", model="qwen")
    policy = OpenAICompatPolicy(config)
    completions = policy.sample(conversations, SamplingParams(max_tokens=1024, temperature=0.7))

Sampling only; no Trainer. What a completion carries depends on the server:

- always: text and finish reason (`stop`, `length`, `content_filter` or `tool_calls`, as the
  server says; `function_call` reads as `tool_calls`, anything else is an OpenAICompatError);
- logprobs when the server returns them (`logprobs: true`, standard);
- token ids only from servers with the vLLM extension (`request_token_ids=True` sends
  `return_token_ids` and reads `prompt_token_ids` / `token_ids`).

A completion with all three is `trainable`; otherwise `untrainable_reason` says which is missing,
and `episode_sample` refuses it with that reason: such a server is for designing and evaluating
(e.g. a frontier model as Designer), not for training the policy it samples.

The API key is read from the environment variable named in the config when a request is sent; it
is never stored on the object, put in an exception or logged. Requests run on a thread pool capped
at `max_concurrency`; connection errors, timeouts, 408/409/429 and 5xx are retried with
exponential backoff and jitter (honouring Retry-After, capped at `max_backoff_s`), other errors
fail at once with the server's message, and so does a reply that breaks the protocol (not JSON,
no choices, malformed logprobs). Standard library only (urllib), so it adds no dependency.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from spade.backends.base import Completion, FinishReason, Message, Prompt, SamplingParams

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class OpenAICompatError(RuntimeError):
    """A request failed for good (after retries, or with a non-retryable status)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class OpenAICompatConfig:
    base_url: str
    """Up to and including the version prefix, e.g. http://127.0.0.1:8000/v1."""
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    """Name of the environment variable holding the key; unset or empty: no Authorization header."""
    max_concurrency: int = 8
    """Most requests in flight at once."""
    timeout_s: float = 300.0
    """Per-request timeout (connect + read)."""
    max_retries: int = 4
    backoff_s: float = 1.0
    """First retry delay; doubles each retry (with +-25% jitter), capped at max_backoff_s."""
    max_backoff_s: float = 30.0
    request_logprobs: bool = True
    """Ask for per-token logprobs (`logprobs: true`); turn off for servers that reject it."""
    request_token_ids: bool = False
    """vLLM extension: ask for prompt and completion token ids (needed to train on the samples)."""
    logprobs_at_temperature: bool = False
    """True if the server's logprobs already include the temperature (vLLM
    `--logprobs-mode processed_logprobs`); by default they are raw (temperature 1)."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """Extra JSON fields sent with every request (e.g. {"chat_template_kwargs": {...}})."""

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")


class OpenAICompatPolicy:
    """Policy over HTTP. `extend` appends messages (the server re-renders the template)."""

    concurrent = True
    """Rollouts ask it one episode at a time from threads (`spade.selfplay.rollout`)."""

    def __init__(self, config: OpenAICompatConfig) -> None:
        self.config = config
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._jitter = random.Random(0)  # only spreads retries out; never affects results

    def __repr__(self) -> str:  # no key in here, ever
        return f"OpenAICompatPolicy(base_url={self.config.base_url!r}, model={self.config.model!r})"

    def sample(
        self, prompts: Sequence[Prompt | Sequence[Message]], params: SamplingParams
    ) -> list[Completion]:
        bodies = [self._body(Prompt.of(p), params, i) for i, p in enumerate(prompts)]
        if not bodies:
            return []
        with ThreadPoolExecutor(max_workers=min(self.config.max_concurrency, len(bodies))) as pool:
            replies = list(pool.map(self._post, bodies))
        return [self._completion(r, params) for r in replies]

    def extend(self, prompt: Prompt, completion: Completion, messages: Sequence[Message]) -> Prompt:
        return Prompt(
            messages=(
                *prompt.messages,
                {"role": "assistant", "content": completion.text},
                *messages,
            )
        )

    # ------------------------------------------------------------------ request / response
    def _body(self, prompt: Prompt, params: SamplingParams, index: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in prompt.messages],
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "n": 1,
        }
        if params.top_k > 0:
            body["top_k"] = (
                params.top_k
            )  # not in OpenAI's API; vLLM, SGLang and llama.cpp accept it
        if params.stop:
            body["stop"] = list(params.stop)
        if params.seed is not None:
            body["seed"] = (params.seed * 1_000_003 + index) % (2**31)
        if self.config.request_logprobs:
            body["logprobs"] = True
        if self.config.request_token_ids:
            body["return_token_ids"] = True
        body.update(self.config.extra_body)
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        return post_json(self._url, body, self.config, self._jitter)

    def _completion(self, reply: dict[str, Any], params: SamplingParams) -> Completion:
        try:
            choice = reply["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise OpenAICompatError(
                f"{self._url}: malformed reply: {json.dumps(reply)[:300]}"
            ) from None
        finish = _finish_reason(choice.get("finish_reason"))
        if finish is None:
            raise OpenAICompatError(
                f"{self._url}: unknown finish_reason {choice.get('finish_reason')!r}"
            )
        try:
            logprobs, token_ids = _parse_logprobs(choice.get("logprobs"))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise OpenAICompatError(
                f"{self._url}: malformed logprobs: {json.dumps(choice.get('logprobs'))[:300]}"
            ) from None
        completion_ids = choice.get("token_ids") or token_ids
        prompt_ids = reply.get("prompt_token_ids") or choice.get("prompt_token_ids")
        missing = [
            name
            for name, value in (
                ("logprobs", logprobs),
                ("completion token ids", completion_ids),
                ("prompt token ids", prompt_ids),
            )
            if value is None
        ]
        if (
            completion_ids is not None
            and logprobs is not None
            and len(completion_ids) != len(logprobs)
        ):
            missing.append("aligned logprobs")
            logprobs = None
        reason = None
        if missing:
            reason = (
                f"the server at {self.config.base_url} returned no {', '.join(missing)}; "
                "its completions can be "
                "used for design and evaluation but not for training"
                + (
                    ""
                    if self.config.request_token_ids
                    else " (token ids need a vLLM server and request_token_ids=True)"
                )
            )
        temperature = params.logprob_temperature if self.config.logprobs_at_temperature else 1.0
        return Completion(
            text=text,
            prompt_ids=tuple(int(t) for t in prompt_ids) if prompt_ids is not None else None,
            completion_ids=tuple(int(t) for t in completion_ids)
            if completion_ids is not None
            else None,
            logprobs=tuple(float(x) for x in logprobs) if logprobs is not None else None,
            finish_reason=finish,
            temperature=temperature,
            untrainable_reason=reason,
        )


FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",  # the deprecated name of a tool call
}


def _finish_reason(value: Any) -> FinishReason | None:
    """The server's finish_reason as ours; None for a value the API does not define."""
    return FINISH_REASONS.get(value) if isinstance(value, str) else None


def _parse_logprobs(block: Any) -> tuple[list[float] | None, list[int] | None]:
    """Logprobs from `choice.logprobs.content`; token ids when tokens read `token_id:N` (vLLM)."""
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return None, None
    entries = block["content"]
    logprobs = [float(e["logprob"]) for e in entries]
    tokens = [str(e.get("token", "")) for e in entries]
    if tokens and all(t.startswith("token_id:") for t in tokens):
        return logprobs, [int(t.split(":", 1)[1]) for t in tokens]
    return logprobs, None


def _error_detail(e: urllib.error.HTTPError) -> str:
    try:
        raw = e.read().decode(errors="replace")
    except OSError:
        return e.reason if isinstance(e.reason, str) else ""
    try:
        message = json.loads(raw).get("error", {})
        raw = message.get("message", raw) if isinstance(message, dict) else str(message)
    except (ValueError, AttributeError):
        pass
    return raw[:500]


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def post_json(
    url: str, body: dict[str, Any], config: Any, jitter: random.Random, text_ok: bool = False
) -> dict[str, Any]:
    """POST `body` as JSON and return the JSON reply, retrying as the module docstring says.

    `config` supplies `api_key_env`, `timeout_s`, `max_retries`, `backoff_s` and
    `max_backoff_s` (OpenAICompatConfig, VLLMConfig); `jitter` only spreads retries out.
    `text_ok`: a successful reply may be plain text (vLLM's `/v1/load_lora_adapter`), returned
    as `{"text": ...}`."""
    return request_json("POST", url, body, config, jitter, text_ok)


def request_json(
    method: str,
    url: str,
    body: dict[str, Any] | None,
    config: Any,
    jitter: random.Random,
    text_ok: bool = False,
) -> dict[str, Any]:
    """One JSON request (`GET` without a body), with `post_json`'s retries and errors."""
    data = None if body is None else json.dumps(body).encode()
    delay = config.backoff_s
    for attempt in range(config.max_retries + 1):
        retry_after: float | None = None
        try:
            request = urllib.request.Request(
                url, data=data, headers=_headers(config.api_key_env), method=method
            )
            with urllib.request.urlopen(request, timeout=config.timeout_s) as response:
                raw = response.read().decode()
            try:
                reply = json.loads(raw) if raw.strip() else {}
            except ValueError:
                if text_ok:
                    return {"text": raw}
                raise OpenAICompatError(f"{url}: reply is not JSON: {raw[:300]!r}") from None
            if not isinstance(reply, dict):
                raise OpenAICompatError(f"{url}: reply is not a JSON object: {raw[:300]!r}")
            return reply
        except urllib.error.HTTPError as e:
            detail = _error_detail(e)
            if e.code not in RETRY_STATUS:
                raise OpenAICompatError(f"{url}: HTTP {e.code}: {detail}", e.code) from None
            failure = f"HTTP {e.code}: {detail}"
            retry_after = _retry_after(e.headers.get("Retry-After") if e.headers else None)
            status: int | None = e.code
        except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
            failure, status = f"{type(e).__name__}: {getattr(e, 'reason', e)}", None
        if attempt == config.max_retries:
            raise OpenAICompatError(
                f"{url}: gave up after {attempt + 1} attempts; last error {failure}", status
            )
        wait = retry_after if retry_after is not None else delay * (0.75 + 0.5 * jitter.random())
        time.sleep(min(wait, config.max_backoff_s))
        delay = min(delay * 2, config.max_backoff_s)
    raise AssertionError("unreachable")


def _headers(api_key_env: str | None) -> dict[str, str]:
    """JSON headers, with the key from the named environment variable when it is set (read at
    each request; never stored, put in an exception or logged)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers
