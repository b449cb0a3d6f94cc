"""A Policy over vLLM servers, token-in/token-out, so their samples can be trained on.

    policy = VLLMPolicy(VLLMConfig(("http://gpu0:8000/v1", "http://gpu1:8000/v1"),
                                   model="qwen", tokenizer="/path/to/qwen"))
    completions = policy.sample(conversations, SamplingParams(max_tokens=1024, seed=0))

Unlike `OpenAICompatPolicy` (chat messages in, text out), every request is
`POST /v1/completions` with the prompt as **token ids** rendered here by `spade.backends.chat`
(the same rendering and turn deltas as the local backend), and vLLM's extensions give back the
exact ids: `return_token_ids` (`prompt_token_ids`, `token_ids`), `logprobs: 0` (the sampled
token's logprob), `include_stop_str_in_output` (a matched stop string stays in the reply, as
locally), `stop_token_ids` (the chat template's end of turn), `seed` (each prompt's own stream
from the batch seed, as locally). `extend` appends the reply's ids as generated plus the turn
delta, never re-tokenizing history, so a multi-turn episode trains on what was sampled.

- Logprobs: start the server with `--logprobs-mode processed_logprobs` (logprobs after
  temperature), the convention `Completion.logprobs` keeps (`logprobs_at_temperature=True`, the
  default); with the raw mode set it False and they are recorded at temperature 1. Processed
  logprobs are also after top-k/top-p truncation, where ours are before it, so sampling with
  `top_p < 1` or `top_k > 0` is refused (the PPO ratio would compare different things).
- Several servers (data parallel): a conversation stays on the server that sampled its first
  turn (`extend` remembers it), so its later turns find their prefix in that server's cache.
- `weight_version` is recorded on each Completion: the counter `spade.backends.weight_sync`
  sets after pushing new weights into the servers (and checks before each sampling call).
- Errors: connection errors, timeouts, 408/409/425/429 and 5xx are retried with backoff (as
  `OpenAICompatPolicy`); a reply that breaks the protocol (no token ids, misaligned logprobs,
  a prompt the server re-tokenized) is an `OpenAICompatError` naming the server.

Needs a tokenizer matching the served model (`tokenizer`: a local folder or hub id, loaded with
transformers); standard library HTTP otherwise.
"""

from __future__ import annotations

import collections
import json
import random
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from spade.backends import chat
from spade.backends.base import Completion, Message, Prompt, SamplingParams
from spade.backends.openai_compat import (
    OpenAICompatError,
    _finish_reason,
    post_json,
    request_json,
)

HOMES_KEPT = 100_000
"""Conversations whose server VLLMPolicy remembers for their next turn."""


def server_root(base_url: str) -> str:
    """`http://host:port/v1` -> `http://host:port` (the control endpoints are not under /v1)."""
    return base_url.rstrip("/").removesuffix("/v1")


@dataclass(frozen=True)
class VLLMConfig:
    base_urls: tuple[str, ...]
    """Each server's URL up to and including `/v1`, e.g. http://127.0.0.1:8000/v1."""
    model: str
    """The served model's name (`--served-model-name`, else the path it was started with)."""
    tokenizer: str
    """A tokenizer matching the served model (local folder or hub id): prompts are rendered and
    tokenized here."""
    api_key_env: str | None = None
    max_concurrency: int = 64
    """Most requests in flight at once, over all servers."""
    timeout_s: float = 600.0
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    logprobs_at_temperature: bool = True
    """The servers run `--logprobs-mode processed_logprobs` (logprobs after temperature)."""
    version_check_s: float = 2.0
    """After a weight push, the servers' versions are checked before sampling at most this often
    (a restarted server is re-synced at the next check); 0 checks before every call."""

    def __post_init__(self) -> None:
        if not self.base_urls:
            raise ValueError("VLLMConfig needs at least one server URL")
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")


class VLLMPolicy:
    """Policy over one or more vLLM servers, sampling token ids."""

    concurrent = True
    """Rollouts ask it one episode at a time from threads (`spade.selfplay.rollout`); the servers
    batch."""

    def __init__(self, config: VLLMConfig, tokenizer: Any = None) -> None:
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(config.tokenizer)
        chat.ensure_chat_template(tokenizer)
        self.config, self.tokenizer = config, tokenizer
        self.eot_ids = chat.end_of_turn_ids(tokenizer)
        if not self.eot_ids:
            raise ValueError(f"{config.tokenizer}: no end-of-turn token; cannot tell a reply's end")
        self.weight_version = 0
        """Set by the weight sync after each update; recorded on every Completion."""
        self.served_model = config.model
        """The model name each request asks for: `config.model`, or the LoRA adapter the
        weight sync loaded into the servers (`--vllm-sync lora`)."""
        self._jitter = random.Random(0)  # only spreads retries out; never affects results
        self._rng = random.Random(0)  # batch seeds when SamplingParams.seed is None
        self._homes: collections.OrderedDict[tuple[int, ...], str] = collections.OrderedDict()
        """Server of each sampled (prompt + reply), then of the extended prompt."""
        self._check_lock = threading.Lock()
        self._checked: tuple[int, float] = (-1, 0.0)
        self.version_check: Callable[[list[str]], None] | None = None
        """Set by a weight sync: called with the servers whose `/weight_info` is not
        `weight_version` (restarted ones) before any sampling, to load the latest weights."""

    def __repr__(self) -> str:
        return f"VLLMPolicy(base_urls={self.config.base_urls!r}, model={self.config.model!r})"

    def server_for(self, token_ids: Sequence[int]) -> str:
        """The server a prompt goes to: the one that sampled the turn it extends (`extend`
        remembers it), so that server's prefix cache holds the conversation; a new conversation
        goes where a hash of its tokens says (spreading conversations over the servers)."""
        home = self._homes.pop(tuple(token_ids), None)
        if home is not None:
            return home
        key = ",".join(str(t) for t in token_ids).encode()
        return self.config.base_urls[zlib.crc32(key) % len(self.config.base_urls)]

    def _remember(self, key: tuple[int, ...], url: str) -> None:
        self._homes[key] = url
        while len(self._homes) > HOMES_KEPT:  # episodes that end never extend: forget the oldest
            self._homes.popitem(last=False)

    def sample(
        self, prompts: Sequence[Prompt | Sequence[Message]], params: SamplingParams
    ) -> list[Completion]:
        if params.top_p < 1.0 or params.top_k > 0:
            raise ValueError(
                "vLLM's processed logprobs are after top-k/top-p truncation and ours before: "
                "sample with top_p=1 and top_k=0 to train on these completions"
            )
        from spade.backends.sampling import row_seeds

        self._check_versions()
        ids = [chat.token_ids_of(self.tokenizer, Prompt.of(p)) for p in prompts]
        if not ids:
            return []
        base = params.seed if params.seed is not None else self._rng.randrange(2**62)
        seeds = row_seeds(base, len(ids))
        requests = [
            (self.server_for(x), self._body(x, params, seed)) for x, seed in zip(ids, seeds)
        ]
        workers = min(self.config.max_concurrency, len(requests))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            replies = list(pool.map(lambda r: self._post(*r), requests))
        version = self.weight_version
        out = []
        for (url, _), x, reply in zip(requests, ids, replies):
            completion = self._completion(url, x, reply, params, version)
            assert completion.completion_ids is not None
            self._remember((*x, *completion.completion_ids), url)
            out.append(completion)
        return out

    def extend(self, prompt: Prompt, completion: Completion, messages: Sequence[Message]) -> Prompt:
        extended = chat.extend_prompt(self.tokenizer, prompt, completion, messages, self.eot_ids)
        assert completion.prompt_ids is not None and completion.completion_ids is not None
        home = self._homes.pop(completion.prompt_ids + completion.completion_ids, None)
        if home is not None and extended.token_ids is not None:
            self._remember(tuple(extended.token_ids), home)
        return extended

    def _check_versions(self) -> None:
        """Before sampling: re-sync the servers that report another weight version (restarted
        ones), at most once per `version_check_s` at the same version: a concurrent rollout calls
        `sample` once per episode and turn."""
        if self.version_check is None or self.weight_version == 0:
            return
        with self._check_lock:
            now = time.monotonic()
            version, at = self._checked
            if version == self.weight_version and now - at < self.config.version_check_s:
                return
            stale = [
                u for u in self.config.base_urls if self.server_version(u) != self.weight_version
            ]
            if stale:
                self.version_check(stale)
            self._checked = (self.weight_version, now)

    def server_version(self, base_url: str) -> int | None:
        """The weight version a server reports (`GET /weight_info`), None if it has none."""
        url = server_root(base_url) + "/weight_info"
        reply = request_json("GET", url, None, self.config, self._jitter)
        value = reply.get("weight_version")
        try:
            return None if value is None else int(value)
        except (TypeError, ValueError):
            return None

    # ------------------------------------------------------------------ request / response
    def _body(self, ids: list[int], params: SamplingParams, seed: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.served_model,
            "prompt": ids,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": 1.0,
            "top_k": -1,  # vLLM's "no top-k"
            "n": 1,
            "seed": seed % (2**31),
            "logprobs": 0,
            "return_token_ids": True,
            "stop_token_ids": sorted(self.eot_ids),
            "include_stop_str_in_output": True,
            "skip_special_tokens": True,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        return body

    def _post(self, base_url: str, body: dict[str, Any]) -> dict[str, Any]:
        return post_json(base_url.rstrip("/") + "/completions", body, self.config, self._jitter)

    def _completion(
        self,
        url: str,
        ids: list[int],
        reply: dict[str, Any],
        params: SamplingParams,
        version: int,
    ) -> Completion:
        def broken(what: str) -> OpenAICompatError:
            return OpenAICompatError(f"{url}: {what}: {json.dumps(reply)[:300]}")

        try:
            choice = reply["choices"][0]
            text = str(choice.get("text") or "")
            completion_ids = [int(t) for t in choice["token_ids"]]
            logprobs = [float(x) for x in choice["logprobs"]["token_logprobs"]]
            prompt_ids = reply.get("prompt_token_ids") or choice.get("prompt_token_ids")
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise broken("reply without token ids and logprobs (is it a vLLM server?)") from None
        finish = _finish_reason(choice.get("finish_reason"))
        if finish is None:
            raise broken(f"unknown finish_reason {choice.get('finish_reason')!r}")
        if len(completion_ids) != len(logprobs):
            raise broken(f"{len(completion_ids)} token ids but {len(logprobs)} logprobs")
        if prompt_ids is not None and [int(t) for t in prompt_ids] != ids:
            raise broken("the server's prompt token ids differ from the ids sent")
        temperature = params.logprob_temperature if self.config.logprobs_at_temperature else 1.0
        return Completion(
            text=text,
            prompt_ids=tuple(ids),
            completion_ids=tuple(completion_ids),
            logprobs=tuple(logprobs),
            finish_reason=finish,
            temperature=temperature,
            weight_version=version,
        )
