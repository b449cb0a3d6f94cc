"""Batched autoregressive sampling over a causal LM with a KV cache, returning exact logprobs.

Our own loop instead of `model.generate`: it reports the logprob of each sampled token under
exactly the distribution the trainer re-scores (logits / temperature, before top-k / top-p), gives
every prompt its own random stream (so a reply depends on the seed and its index, not on which
other prompts share the batch), and drops finished rows from the cache as it goes.

Prompts are left-padded; position ids count only real tokens, so a padded row computes what it
would compute alone (up to float rounding). Only the last position's logits are computed during
prefill (`logits_to_keep=1`): projecting a 1,000-token prompt onto a 49,152-word vocabulary
cost more than the rest of the forward pass.

Multi-turn play re-sends each conversation with a few new tokens per turn. `PrefixCache` keeps
the key/value tensors of every conversation after its reply, keyed by the token ids they cover,
so the next turn computes only its new tokens: a batch mixes rows with cached prefixes of
different lengths and rows without, laid out as `[pad][cached prefix][pad][new tokens]` with the
pads masked out and positions counted per row. The cache is only valid for the weights that
filled it: the backend clears it whenever the weights change.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from spade.backends.base import FinishReason, SamplingParams


@dataclass
class RawCompletion:
    ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason


def cache_kwarg(model: Any) -> str:
    """forward()'s KV-cache keyword: `cache` (newer transformers) or `past_key_values`."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft wrapper
    params = inspect.signature(base.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def new_cache(model: Any, capacity: int = 0) -> Any:
    """A KV cache for `model`; with `capacity`, full-attention layers write new tokens into
    preallocated room instead of concatenating (see `_RoomyLayer`)."""
    from transformers import DynamicCache

    try:
        cache = DynamicCache(config=model.config)
    except TypeError:  # older transformers
        return DynamicCache()
    layers = getattr(cache, "layers", None)
    if capacity > 0 and layers and all(type(layer) is _dynamic_layer() for layer in layers):
        cache.layers = [_RoomyLayer(capacity) for _ in layers]
    return cache


def _dynamic_layer() -> type:
    from transformers.cache_utils import DynamicLayer

    return DynamicLayer


class _RoomyLayer(_dynamic_layer()):  # type: ignore[misc]
    """A full-attention cache layer with room for `capacity` tokens (grown by doubling).

    transformers' DynamicLayer concatenates every new token onto the whole cache: at 32 rows of
    a 1,000-token prompt that copies ~1.6 GB per generated token for a 30-layer model. Here keys
    and values are written in place and attention reads a view of the filled part."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self.filled = 0
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, add = self.filled, key_states.shape[-2]
        if self._k is None or n + add > self._k.shape[-2]:
            room = max(self.capacity, 2 * (n + add))
            k = key_states.new_empty((*key_states.shape[:2], room, key_states.shape[-1]))
            v = value_states.new_empty((*value_states.shape[:2], room, value_states.shape[-1]))
            if self._k is not None and self._v is not None:
                k[:, :, :n] = self._k[:, :, :n]
                v[:, :, :n] = self._v[:, :, :n]
            self._k, self._v = k, v
        assert self._v is not None
        self._k[:, :, n : n + add] = key_states
        self._v[:, :, n : n + add] = value_states
        self.filled = n + add
        self.keys, self.values = self._k[:, :, : self.filled], self._v[:, :, : self.filled]
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.filled

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self._k is not None and self._v is not None and self.filled:
            self._k, self._v = self._k[indices], self._v[indices]
            self.keys, self.values = self._k[:, :, : self.filled], self._v[:, :, : self.filled]


def row_seeds(base_seed: int, n: int) -> list[int]:
    """Independent 63-bit seeds for n prompts from one batch seed (splitmix64)."""
    out = []
    for i in range(n):
        z = (base_seed * 0x9E3779B97F4A7C15 + (i + 1) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        out.append((z ^ (z >> 31)) & 0x7FFFFFFFFFFFFFFF)
    return out


def _filter_sorted(
    logits_BV: torch.Tensor, top_k: int, top_p: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted (descending) probabilities with the top-k / top-p tail zeroed, and the sort index."""
    sorted_logits, index = torch.sort(logits_BV, dim=-1, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    keep = torch.ones_like(probs, dtype=torch.bool)
    if top_k > 0:
        keep[:, top_k:] = False
    if top_p < 1.0:
        before = torch.cumsum(probs, dim=-1) - probs  # mass strictly above each token
        keep &= before < top_p
    keep[:, 0] = True
    return probs * keep, index


def _draw(probs_BV: torch.Tensor, generators: Sequence[torch.Generator]) -> torch.Tensor:
    """One index per row by inverse CDF, with row i's uniform taken from generators[i]."""
    u = torch.stack(
        [torch.rand((), generator=g, device=g.device, dtype=torch.float64) for g in generators]
    ).to(probs_BV.device)
    cdf = torch.cumsum(probs_BV.double(), dim=-1)
    target = (u * cdf[:, -1]).unsqueeze(-1)
    idx = torch.searchsorted(cdf, target, right=True).squeeze(-1)
    return idx.clamp_(max=probs_BV.shape[-1] - 1)


KV = list[tuple[torch.Tensor, torch.Tensor]]
"""One conversation's keys and values per layer, each (kv_heads, tokens, head_dim)."""


class PrefixCache:
    """Per-conversation KV tensors keyed by the token ids they cover; LRU under a byte budget.

    An entry is taken (removed) when a prompt extends it, and the longer conversation is stored
    again after its reply, so a conversation holds one entry at a time."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple[int, ...], tuple[KV, int]] = OrderedDict()
        self.hits = self.misses = self.reused_tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    def longest(self, ids: Sequence[int]) -> tuple[int, ...] | None:
        """The key of the longest cached strict prefix of `ids`, or None (nothing changes)."""
        best: tuple[int, ...] | None = None
        n = len(ids)
        for key in self._entries:
            k = len(key)
            if k >= n or (best is not None and k <= len(best)) or ids[k - 1] != key[-1]:
                continue
            if tuple(ids[:k]) == key:
                best = key
        return best

    def take(self, ids: Sequence[int]) -> tuple[int, KV | None]:
        """The longest cached strict prefix of `ids` (removed from the cache), or (0, None)."""
        best = self.longest(ids)
        if best is None:
            self.misses += 1
            return 0, None
        kv, size = self._entries.pop(best)
        self.bytes -= size
        self.hits += 1
        self.reused_tokens += len(best)
        return len(best), kv

    def put(self, ids: tuple[int, ...], kv: KV) -> None:
        size = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
        if size > self.max_bytes or not ids:
            return
        if ids in self._entries:
            self.bytes -= self._entries.pop(ids)[1]
        self._entries[ids] = (kv, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.bytes -= dropped

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0


def _layers(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(keys, values) per layer of a DynamicCache, each (batch, kv_heads, tokens, head_dim)."""
    if hasattr(cache, "layers"):  # transformers >= 4.56
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache))


def _extract(cache: Any, row: int, columns: torch.Tensor) -> KV:
    return [
        (k[row].index_select(1, columns), v[row].index_select(1, columns))
        for k, v in _layers(cache)
    ]


def _prefilled_cache(
    model: Any, cached: Sequence[KV | None], lengths: Sequence[int], capacity: int
) -> Any:
    """A batch cache of width max(lengths): row i's cached tensors right-aligned, zeros before.

    Consumes `cached`: each layer's entries are dropped once copied, so the stored entries and
    the batch cache are not both held whole (the taken entries are referenced nowhere else)."""
    cache = new_cache(model, capacity)
    C = max(lengths)
    template = next(kv for kv in cached if kv is not None)
    for layer in range(len(template)):
        k0, v0 = template[layer]
        keys = k0.new_zeros((len(cached), k0.shape[0], C, k0.shape[2]))
        values = v0.new_zeros((len(cached), v0.shape[0], C, v0.shape[2]))
        del k0, v0
        for i, kv in enumerate(cached):
            if kv is not None:
                keys[i, :, C - lengths[i] :] = kv[layer][0]
                values[i, :, C - lengths[i] :] = kv[layer][1]
                kv[layer] = (keys.new_empty(0), values.new_empty(0))  # copied: let it go
        cache.update(keys, values, layer)
        del keys, values
    return cache


PREFILL_TOKENS = 4096
"""Prompt tokens (rows x columns) fed per forward pass before the first reply token. Attention
over a left-padded batch materialises rows x heads x columns x width fp32 scores per layer: for
the default model (9 heads) and the small recipe's 32 rows at its 2,048-token context, 4.8 GB
in one pass, 0.3 GB in chunks of 128 columns (4,096 tokens)."""


def _logits_kwarg(model: Any) -> dict[str, int]:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(base.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in params:
            return {name: 1}
    return {}


PADDING_SLACK = 2.0
"""A batch is split by prompt length when left padding would more than double the positions
the model runs over (see `length_groups`)."""


def length_groups(lengths: Sequence[int], slack: float = PADDING_SLACK) -> list[list[int]]:
    """Row indices grouped so that each group's padded area (its longest prompt x its rows) is
    at most `slack` x its real tokens; shortest first, one group when the lengths are close.

    A batch pads every prompt to the longest: one 2,500-token question among 29 of 100 tokens
    makes the prefill run over 75,000 positions for 5,400 real ones (measured: a reasoning-gym
    evaluation at level 1 took minutes instead of seconds). Rows keep their own seeds, so the
    split only changes which rows share a forward pass."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    groups: list[list[int]] = []
    current: list[int] = []
    real = 0
    for i in order:  # ascending: lengths[i] is the longest of current + [i]
        if current and lengths[i] * (len(current) + 1) > slack * (real + lengths[i]):
            groups.append(current)
            current, real = [], 0
        current.append(i)
        real += lengths[i]
    if current:
        groups.append(current)
    return groups


@torch.no_grad()
def generate(
    model: Any,
    prompts: Sequence[Sequence[int]],
    params: SamplingParams,
    *,
    seeds: Sequence[int],
    eos_ids: set[int],
    pad_id: int,
    stop_hit: Callable[[list[int]], bool] | None,
    device: torch.device,
    autocast: AbstractContextManager[object] | None = None,
    prefix_cache: PrefixCache | None = None,
    prefill_tokens: int = PREFILL_TOKENS,
    padding_slack: float = PADDING_SLACK,
) -> list[RawCompletion]:
    """Sample one reply per prompt. `stop_hit(ids)` says whether a stop string just completed.

    With a `prefix_cache`, a prompt that extends a cached conversation starts from its stored
    keys and values, and every conversation is stored again after its reply. The prompts are
    fed in chunks of about `prefill_tokens` tokens over the batch (at least one column)."""
    B = len(prompts)
    if B == 0:
        return []
    if any(len(p) == 0 for p in prompts):
        raise ValueError("empty prompt")
    kw = cache_kwarg(model)
    keep = _logits_kwarg(model)
    hit = [prefix_cache is not None and prefix_cache.longest(p) is not None for p in prompts]
    if any(hit) and not all(hit):
        # One batch would lay every row out as [cached width][longest new part]: the rows
        # without a cached prefix make the new part a whole conversation for every row, and
        # the batch cache twice as wide. Two passes (each row keeps its own seed) cost a
        # second decode loop instead and bound the memory by the larger group.
        groups = [[i for i in range(B) if hit[i]], [i for i in range(B) if not hit[i]]]
    else:
        groups = length_groups([len(p) for p in prompts], padding_slack)
    if len(groups) > 1:
        out: list[RawCompletion] = [RawCompletion([], [], "length")] * B
        for group in groups:
            done = generate(
                model,
                [prompts[i] for i in group],
                params,
                seeds=[seeds[i] for i in group],
                eos_ids=eos_ids,
                pad_id=pad_id,
                stop_hit=stop_hit,
                device=device,
                autocast=autocast,
                prefix_cache=prefix_cache,
                prefill_tokens=prefill_tokens,
                padding_slack=padding_slack,
            )
            for i, r in zip(group, done):
                out[i] = r
        return out
    taken = [prefix_cache.take(p) if prefix_cache is not None else (0, None) for p in prompts]
    cached_len = [n for n, _ in taken]
    C = max(cached_len)
    new = [list(p[n:]) for p, (n, _) in zip(prompts, taken)]
    S = max(len(x) for x in new)
    room = C + S + params.max_tokens
    if C:
        cache = _prefilled_cache(model, [kv for _, kv in taken], cached_len, room)
    else:
        cache = new_cache(model, room)
    del taken  # emptied by _prefilled_cache; nothing of them is kept during the reply
    gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
    input_ids = torch.full((B, S), pad_id, dtype=torch.long)
    mask = torch.zeros((B, C + S), dtype=torch.long)
    positions = torch.zeros((B, S), dtype=torch.long)
    for i, x in enumerate(new):
        c, n = cached_len[i], len(x)
        input_ids[i, S - n :] = torch.tensor(x, dtype=torch.long)
        mask[i, C - c : C] = 1
        mask[i, C + S - n :] = 1
        positions[i, S - n :] = torch.arange(c, c + n)
    input_ids, mask, positions = input_ids.to(device), mask.to(device), positions.to(device)
    # No padding anywhere (one prompt, or equal lengths and no cache): let attention run causal.
    dense = bool(mask.all())
    eos = torch.tensor(sorted(eos_ids), dtype=torch.long, device=device)
    temperature = params.logprob_temperature
    greedy = params.temperature == 0
    filtering = params.top_k > 0 or params.top_p < 1.0

    out = [RawCompletion([], [], "length") for _ in range(B)]
    alive = list(range(B))  # original index of each row still in the batch
    ctx = autocast if autocast is not None else nullcontext()

    def store(row: int, i: int) -> None:
        # The cache holds the prompt and every generated token but the last (never fed back).
        if prefix_cache is not None:
            columns = mask[row].nonzero().squeeze(-1)
            prefix_cache.put((*prompts[i], *out[i].ids[:-1]), _extract(cache, row, columns))

    # One autocast context for the whole reply: autocast caches the bf16 copies of the weights
    # only inside a context, and re-entering it every token re-cast all of them (2x slower).
    with ctx:
        width = max(1, prefill_tokens // B)
        for lo in range(0, S - width, width):  # every chunk of the prompts but the last
            model(
                input_ids=input_ids[:, lo : lo + width],
                attention_mask=None if dense else mask[:, : C + lo + width],
                position_ids=positions[:, lo : lo + width],
                use_cache=True,
                **keep,
                **{kw: cache},
            )
        last = (S - 1) // width * width
        step_ids, step_pos = input_ids[:, last:], positions[:, last:]
        for t in range(params.max_tokens):
            logits = model(
                input_ids=step_ids,
                attention_mask=None if dense else mask,
                position_ids=step_pos,
                use_cache=True,
                **keep,
                **{kw: cache},
            ).logits[:, -1, :]
            scaled = logits.float() / temperature
            logp_all = torch.log_softmax(scaled, dim=-1)
            if greedy:
                token = scaled.argmax(-1)
            elif filtering:
                probs, index = _filter_sorted(scaled, params.top_k, params.top_p)
                token = index.gather(
                    -1, _draw(probs, [gens[i] for i in alive]).unsqueeze(-1)
                ).squeeze(-1)
            else:
                token = _draw(logp_all.exp(), [gens[i] for i in alive])
            token_logp = logp_all.gather(-1, token.unsqueeze(-1)).squeeze(-1)
            is_eos = torch.isin(token, eos)
            tokens, lps, eos_flags = token.tolist(), token_logp.tolist(), is_eos.tolist()
            last = t == params.max_tokens - 1
            keep_rows: list[int] = []
            for row, i in enumerate(alive):
                out[i].ids.append(tokens[row])
                out[i].logprobs.append(lps[row])
                if eos_flags[row] or (stop_hit is not None and stop_hit(out[i].ids)):
                    out[i].finish_reason = "stop"
                    store(row, i)
                elif last:
                    store(row, i)
                else:
                    keep_rows.append(row)
            if not keep_rows:
                break
            if len(keep_rows) < len(alive):
                rows = torch.tensor(keep_rows, device=device)
                cache.batch_select_indices(rows)  # type: ignore[attr-defined]
                token, mask, step_pos = token[rows], mask[rows], step_pos[rows]
                alive = [alive[r] for r in keep_rows]
            step_ids = token.unsqueeze(-1)
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
            step_pos = step_pos[:, -1:] + 1
    return out
