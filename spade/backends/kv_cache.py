"""Key/value caches for the local sampler (spade.backends.sampling): the batch's cache with room
preallocated for the reply, and the prefix cache that keeps each conversation between turns.

Multi-turn play re-sends each conversation with a few new tokens per turn. `PrefixCache` keeps
the key/value tensors of every conversation after its reply, keyed by the token ids they cover,
so the next turn computes only its new tokens: `prefilled_cache` lays the cached prefixes of a
batch out right-aligned, and `row_kv` reads one row back out after its reply. The cache is only
valid for the weights that filled it: the backend clears it whenever the weights change.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch


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


def row_kv(cache: Any, row: int, columns: torch.Tensor) -> KV:
    """Batch row `row`'s keys and values at `columns` (its unmasked ones), per layer."""
    return [
        (k[row].index_select(1, columns), v[row].index_select(1, columns))
        for k, v in _layers(cache)
    ]


def prefilled_cache(
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
