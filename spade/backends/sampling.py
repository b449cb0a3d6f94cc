"""Batched autoregressive sampling over a causal LM with a KV cache, returning exact logprobs.

Our own loop instead of `model.generate`: it reports the logprob of each sampled token under
exactly the distribution the trainer re-scores (logits / temperature, before top-k / top-p), gives
every prompt its own random stream (so a reply depends on the seed and its index, not on which
other prompts share the batch), and drops finished rows from the cache as it goes.

Prompts are left-padded; position ids count only real tokens, so a padded row computes what it
would compute alone (up to float rounding). Only the last position's logits are computed during
prefill (`logits_to_keep=1`): projecting a 1,000-token prompt onto a 49,152-word vocabulary
cost more than the rest of the forward pass.

Multi-turn play re-sends each conversation with a few new tokens per turn: with a prefix cache
(spade.backends.kv_cache) the next turn computes only its new tokens, and a batch mixes rows with
cached prefixes of different lengths and rows without, laid out as
`[pad][cached prefix][pad][new tokens]` with the pads masked out and positions counted per row.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from spade.backends.base import FinishReason, SamplingParams
from spade.backends.kv_cache import (
    PrefixCache,
    cache_kwarg,
    new_cache,
    prefilled_cache,
    row_kv,
)


@dataclass
class RawCompletion:
    ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason


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
    fed in chunks of about `prefill_tokens` tokens over the batch (at least one column).

    A batch whose rows would not share a forward pass well (`_groups`) is sampled as several,
    each row with its own seed; one batch is laid out (`_lay_out`), its prompts fed
    (`_prefill`) and its replies decoded token by token (`_decode`)."""
    B = len(prompts)
    if B == 0:
        return []
    if any(len(p) == 0 for p in prompts):
        raise ValueError("empty prompt")
    groups = _groups(prompts, prefix_cache, padding_slack)
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
    batch = _lay_out(model, prompts, prefix_cache, params.max_tokens, pad_id, device)
    gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
    # One autocast context for the whole reply: autocast caches the bf16 copies of the weights
    # only inside a context, and re-entering it every token re-cast all of them (2x slower).
    with autocast if autocast is not None else nullcontext():
        step_ids, step_pos = _prefill(model, batch, prefill_tokens)
        return _decode(
            model,
            batch,
            step_ids,
            step_pos,
            prompts,
            params,
            gens,
            eos_ids,
            stop_hit,
            device,
            prefix_cache,
        )


def _groups(
    prompts: Sequence[Sequence[int]], prefix_cache: PrefixCache | None, padding_slack: float
) -> list[list[int]]:
    """The row indices of the batches to sample separately: rows with a cached prefix apart from
    rows without one, else rows grouped by prompt length (`length_groups`); one group when the
    whole batch fits one layout."""
    B = len(prompts)
    hit = [prefix_cache is not None and prefix_cache.longest(p) is not None for p in prompts]
    if any(hit) and not all(hit):
        # One batch would lay every row out as [cached width][longest new part]: the rows
        # without a cached prefix make the new part a whole conversation for every row, and
        # the batch cache twice as wide. Two passes (each row keeps its own seed) cost a
        # second decode loop instead and bound the memory by the larger group.
        return [[i for i in range(B) if hit[i]], [i for i in range(B) if not hit[i]]]
    return length_groups([len(p) for p in prompts], padding_slack)


@dataclass
class _Batch:
    """One batch laid out for the model, each row `[pad][cached prefix][pad][new tokens]`: the
    new tokens (B, S) left-padded with their positions (counted per row from its cached
    prefix), the attention mask over cached and new columns (B, C + S), and the KV cache
    holding the cached prefixes right-aligned in C columns, with room for the reply."""

    input_ids: torch.Tensor
    positions: torch.Tensor
    mask: torch.Tensor
    cache: Any
    dense: bool
    """No padding anywhere (one prompt, or equal lengths and no cache): attention runs causal."""
    forward: dict[str, Any]
    """The model's keyword arguments for the cache and for computing the last logits only."""


def _lay_out(
    model: Any,
    prompts: Sequence[Sequence[int]],
    prefix_cache: PrefixCache | None,
    max_tokens: int,
    pad_id: int,
    device: torch.device,
) -> _Batch:
    """The batch of `prompts`, each starting from its longest cached prefix (taken out of
    `prefix_cache`), with cache room for the prompts and `max_tokens` reply tokens."""
    B = len(prompts)
    kw = cache_kwarg(model)
    keep = _logits_kwarg(model)
    taken = [prefix_cache.take(p) if prefix_cache is not None else (0, None) for p in prompts]
    cached_len = [n for n, _ in taken]
    C = max(cached_len)
    new = [list(p[n:]) for p, (n, _) in zip(prompts, taken)]
    S = max(len(x) for x in new)
    room = C + S + max_tokens
    if C:
        cache = prefilled_cache(model, [kv for _, kv in taken], cached_len, room)
    else:
        cache = new_cache(model, room)
    del taken  # emptied by prefilled_cache; nothing of them is kept during the reply
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
    return _Batch(input_ids, positions, mask, cache, bool(mask.all()), {**keep, kw: cache})


def _prefill(model: Any, batch: _Batch, prefill_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Feed every chunk of the new tokens but the last, about `prefill_tokens` tokens over the
    batch at a time; return the last chunk's ids and positions (the first decoding step's)."""
    B, S = batch.input_ids.shape
    C = batch.mask.shape[1] - S
    width = max(1, prefill_tokens // B)
    for lo in range(0, S - width, width):  # every chunk of the prompts but the last
        model(
            input_ids=batch.input_ids[:, lo : lo + width],
            attention_mask=None if batch.dense else batch.mask[:, : C + lo + width],
            position_ids=batch.positions[:, lo : lo + width],
            use_cache=True,
            **batch.forward,
        )
    last = (S - 1) // width * width
    return batch.input_ids[:, last:], batch.positions[:, last:]


def _decode(
    model: Any,
    batch: _Batch,
    step_ids: torch.Tensor,
    step_pos: torch.Tensor,
    prompts: Sequence[Sequence[int]],
    params: SamplingParams,
    generators: Sequence[torch.Generator],
    eos_ids: set[int],
    stop_hit: Callable[[list[int]], bool] | None,
    device: torch.device,
    prefix_cache: PrefixCache | None,
) -> list[RawCompletion]:
    """The replies, one token per forward pass from `step_ids` on: a row leaves the batch (and
    the cache) at an end-of-turn token, a completed stop string or `params.max_tokens`, and is
    then stored in `prefix_cache`."""
    eos = torch.tensor(sorted(eos_ids), dtype=torch.long, device=device)
    out = [RawCompletion([], [], "length") for _ in prompts]
    alive = list(range(len(prompts)))  # original index of each row still in the batch
    mask = batch.mask
    for t in range(params.max_tokens):
        logits = model(
            input_ids=step_ids,
            attention_mask=None if batch.dense else mask,
            position_ids=step_pos,
            use_cache=True,
            **batch.forward,
        ).logits[:, -1, :]
        token, token_logp = _next_tokens(logits, params, [generators[i] for i in alive])
        is_eos = torch.isin(token, eos)
        tokens, lps, eos_flags = token.tolist(), token_logp.tolist(), is_eos.tolist()
        last = t == params.max_tokens - 1
        keep_rows: list[int] = []
        for row, i in enumerate(alive):
            out[i].ids.append(tokens[row])
            out[i].logprobs.append(lps[row])
            if eos_flags[row] or (stop_hit is not None and stop_hit(out[i].ids)):
                out[i].finish_reason = "stop"
                _store(prefix_cache, batch.cache, row, mask, prompts[i], out[i].ids)
            elif last:
                _store(prefix_cache, batch.cache, row, mask, prompts[i], out[i].ids)
            else:
                keep_rows.append(row)
        if not keep_rows:
            break
        if len(keep_rows) < len(alive):
            rows = torch.tensor(keep_rows, device=device)
            batch.cache.batch_select_indices(rows)
            token, mask, step_pos = token[rows], mask[rows], step_pos[rows]
            alive = [alive[r] for r in keep_rows]
        step_ids = token.unsqueeze(-1)
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
        step_pos = step_pos[:, -1:] + 1
    return out


def _next_tokens(
    logits_BV: torch.Tensor, params: SamplingParams, generators: Sequence[torch.Generator]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's next token (greedy, filtered by top-k / top-p, or drawn from the whole
    distribution, row i's draw from generators[i]) and its logprob under logits / the logprob
    temperature."""
    scaled = logits_BV.float() / params.logprob_temperature
    logp_all = torch.log_softmax(scaled, dim=-1)
    if params.temperature == 0:
        token = scaled.argmax(-1)
    elif params.top_k > 0 or params.top_p < 1.0:
        probs, index = _filter_sorted(scaled, params.top_k, params.top_p)
        token = index.gather(-1, _draw(probs, generators).unsqueeze(-1)).squeeze(-1)
    else:
        token = _draw(logp_all.exp(), generators)
    return token, logp_all.gather(-1, token.unsqueeze(-1)).squeeze(-1)


def _store(
    prefix_cache: PrefixCache | None,
    cache: Any,
    row: int,
    mask: torch.Tensor,
    prompt: Sequence[int],
    reply: list[int],
) -> None:
    """Keep batch row `row`'s keys and values (its unmasked columns) in `prefix_cache`, keyed
    by the prompt and every reply token but the last (the cache holds them; the last token was
    never fed back)."""
    if prefix_cache is not None:
        columns = mask[row].nonzero().squeeze(-1)
        prefix_cache.put((*prompt, *reply[:-1]), row_kv(cache, row, columns))
