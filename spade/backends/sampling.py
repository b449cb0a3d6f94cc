"""Batched autoregressive sampling over a causal LM with a KV cache, returning exact logprobs.

Our own loop instead of `model.generate`: it reports the logprob of each sampled token under
exactly the distribution the trainer re-scores (logits / temperature, before top-k / top-p), gives
every prompt its own random stream (so a reply depends on the seed and its index, not on which
other prompts share the batch), and drops finished rows from the cache as it goes.

Prompts are left-padded; position ids count only real tokens, so a padded row computes what it
would compute alone (up to float rounding).
"""

from __future__ import annotations

import inspect
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


def new_cache(model: Any) -> object:
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # older transformers
        return DynamicCache()


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
) -> list[RawCompletion]:
    """Sample one reply per prompt. `stop_hit(ids)` says whether a stop string just completed."""
    B = len(prompts)
    if B == 0:
        return []
    if any(len(p) == 0 for p in prompts):
        raise ValueError("empty prompt")
    kw = cache_kwarg(model)
    cache = new_cache(model)
    gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
    L = max(len(p) for p in prompts)
    input_ids = torch.full((B, L), pad_id, dtype=torch.long)
    mask = torch.zeros((B, L), dtype=torch.long)
    for i, p in enumerate(prompts):
        input_ids[i, L - len(p) :] = torch.tensor(list(p), dtype=torch.long)
        mask[i, L - len(p) :] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp_(min=0)
    eos = torch.tensor(sorted(eos_ids), dtype=torch.long, device=device)
    temperature = params.logprob_temperature
    greedy = params.temperature == 0
    filtering = params.top_k > 0 or params.top_p < 1.0

    out = [RawCompletion([], [], "length") for _ in range(B)]
    alive = list(range(B))  # original index of each row still in the batch
    step_ids, step_pos = input_ids, positions
    ctx = autocast if autocast is not None else nullcontext()
    for t in range(params.max_tokens):
        with ctx:
            logits = model(
                input_ids=step_ids,
                attention_mask=mask,
                position_ids=step_pos,
                use_cache=True,
                **{kw: cache},
            ).logits[:, -1, :]
        scaled = logits.float() / temperature
        logp_all = torch.log_softmax(scaled, dim=-1)
        if greedy:
            token = scaled.argmax(-1)
        elif filtering:
            probs, index = _filter_sorted(scaled, params.top_k, params.top_p)
            token = index.gather(-1, _draw(probs, [gens[i] for i in alive]).unsqueeze(-1)).squeeze(
                -1
            )
        else:
            token = _draw(logp_all.exp(), [gens[i] for i in alive])
        token_logp = logp_all.gather(-1, token.unsqueeze(-1)).squeeze(-1)
        is_eos = torch.isin(token, eos)
        tokens, lps, eos_flags = token.tolist(), token_logp.tolist(), is_eos.tolist()
        keep: list[int] = []
        for row, i in enumerate(alive):
            out[i].ids.append(tokens[row])
            out[i].logprobs.append(lps[row])
            if eos_flags[row] or (stop_hit is not None and stop_hit(out[i].ids)):
                out[i].finish_reason = "stop"
            else:
                keep.append(row)
        if not keep or t == params.max_tokens - 1:
            break
        if len(keep) < len(alive):
            rows = torch.tensor(keep, device=device)
            cache.batch_select_indices(rows)  # type: ignore[attr-defined]
            token, mask, step_pos = token[rows], mask[rows], step_pos[rows]
            alive = [alive[r] for r in keep]
        step_ids = token.unsqueeze(-1)
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
        step_pos = step_pos[:, -1:] + 1
    return out
